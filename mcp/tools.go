package mcp

import (
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/problem"
)

// listTools answers tools/list, in both generations: the tools the caller
// may call; under 2025-11-25 each may be called as a task.
func (h *handler) listTools(q *request) {
	cursor, ok := q.cursor()
	if !ok {
		return
	}
	page, err := h.cfg.Backend.Tools(q.r.Context(), q.p, cursor)
	if err != nil {
		q.fail(h.backendError(err, errBadCursor()))
		return
	}
	tools := make([]mcpTool, len(page.Tools))
	for i, t := range page.Tools {
		tools[i] = newTool(t, !q.modern && q.version == versionTasks)
	}
	res := pageResult("tools", tools, page.Next)
	if q.modern {
		res["resultType"], res["ttlMs"], res["cacheScope"], res["_meta"] = resultComplete, 0, "private", h.serverMeta()
	}
	q.reply(res)
}

// cursor reads the params of a list method, in both generations: the
// cursor of the page asked for, "" for the first. ok is false when q has
// been answered with the error.
func (q *request) cursor() (cursor string, ok bool) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return "", false
	}
	return p.Cursor, true
}

// errBadCursor is a list method's cursor that no page of this server gave.
func errBadCursor() *rpcError {
	return errInvalidParams("cursor", "is not a cursor of this server")
}

// pageResult is the result of a list method: the page's items under key,
// and the cursor of the next page when there is one.
func pageResult(key string, items any, next string) map[string]any {
	res := map[string]any{key: items}
	if next != "" {
		res["nextCursor"] = next
	}
	return res
}

// callParams are the params of tools/call, both generations.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Task      *struct {
		TTL *int64 `json:"ttl"`
	} `json:"task"` // 2025-11-25: call as a task
	InputResponses map[string]json.RawMessage `json:"inputResponses"` // stateless: a retried call's answers
	RequestState   string                     `json:"requestState"`
}

// readCall reads tools/call's params.
func readCall(q *request) (callParams, *rpcError) {
	var p callParams
	if e := decodeParams(q.m.params, &p); e != nil {
		return p, e
	}
	if p.Name == "" {
		return p, errInvalidParams("name", "is required")
	}
	switch {
	case len(p.Arguments) == 0 || string(p.Arguments) == "null":
		p.Arguments = json.RawMessage("{}")
	case p.Arguments[0] != '{':
		return p, errInvalidParams("arguments", "must be an object")
	}
	return p, nil
}

// call starts the task of a tool call. Arguments outside the tool's schema
// are a tool error the model can correct (ok false, result set), not a
// protocol error.
func (h *handler) call(q *request, p callParams, ttl *int64) (t Task, toolErr *callToolResult, e *rpcError) {
	t, err := h.cfg.Backend.Call(q.r.Context(), q.p, Call{Tool: p.Name, Arguments: p.Arguments, TTLMs: ttl})
	var verr *problem.ValidationError
	if errors.As(err, &verr) && (verr.Field == "arguments" || strings.HasPrefix(verr.Field, "arguments.") || strings.HasPrefix(verr.Field, "arguments[")) {
		res := callToolResult{Content: []*sdk.TextContent{{Text: "invalid arguments: " + verr.Error()}}, IsError: true}
		if q.modern {
			res.ResultType = resultComplete
		}
		return t, &res, nil
	}
	if err != nil {
		return t, nil, h.backendError(err, errNoSuchTool(p.Name))
	}
	return t, nil, nil
}
