// Package a2a is the Agent2Agent face at /a2a: protocol 1.0 over its
// HTTP+JSON and JSON-RPC bindings (a2a-go's transports), and the agent
// cards. It implements a2a-go's RequestHandler directly over the tool,
// task and session services: a message without a task id calls a tool, a
// message with one answers the task's oldest open question, and every read
// is the task as the services keep it, in A2A's shapes. Streams follow the
// task's event log, so any replica serves any request and a waiting stream
// costs no store traffic.
//
// It imports the services (tasks, tools, sessions), waits, authz, idem,
// problem and api/wire, never store.
package a2a
