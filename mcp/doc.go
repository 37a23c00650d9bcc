// Package mcp is the Model Context Protocol face of taskhook: the /mcp
// endpoint (Streamable HTTP, POST only) and the protected resource
// metadata that its 401s point to. It speaks both protocol generations in
// use, over the same services:
//
//   - 2026-07-28, stateless, with the tasks extension
//     (io.modelcontextprotocol/tasks): server/discover, tools/list,
//     tools/call (a task to a client that declared the extension, else the
//     result once the task ends), tasks/get with the open questions as
//     elicitation/create requests, tasks/update, tasks/cancel,
//     subscriptions/listen streaming notifications/tasks; the transport's
//     header rules (MCP-Protocol-Version, Mcp-Method, Mcp-Name).
//   - 2025-11-25 (and 2025-06-18, 2025-03-26 without tasks), which begin
//     with initialize: task-augmented tools/call, tasks/get, tasks/list,
//     tasks/cancel, tasks/result streaming elicitation/create and
//     notifications/tasks/status to a client that takes elicitations.
//
// It owns the protocol: the JSON-RPC envelope and its errors, the
// generations' shapes of a task, a tool, a result and a question, and the
// mapping of elicitation answers to input responses. It holds no rule of
// the service and nothing of a conversation: a session id carries what a
// client said at initialize, and an elicitation's request id names the task
// and the input request it asks, so any replica serves any request. What
// it needs of the services it declares as Backend, which app implements
// over them; a held answer waits on a Backend Watch, parked off the handler
// by the Parker app gives it where it can be.
//
// It imports api/wire (the API's shapes), authz (the principal), problem
// (the services' refusals), strictjson (how a type mismatch is named),
// parking, requestlog and requestid (LotParker: a held answer parked, and
// logged as the handler would have), the standard library, and the MCP Go
// SDK's
// jsonrpc and mcp packages for their types. It imports no service, store
// or handler.
package mcp
