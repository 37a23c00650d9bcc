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
	res, ok := readPage(q, "tools", func(cursor string) ([]Tool, string, error) {
		page, err := h.cfg.Backend.Tools(q.r.Context(), q.p, cursor)
		return page.Tools, page.Next, err
	}, func(t Tool) mcpTool { return newTool(t, !q.modern && q.version == versionTasks) })
	if !ok {
		return
	}
	if q.modern {
		res["resultType"], res["ttlMs"], res["cacheScope"], res["_meta"] = resultComplete, 0, "private", h.serverMeta()
	}
	q.reply(res)
}

// readPage reads the page a list method asks for, in both generations: the
// items fetch gives at the params' cursor, each shown by show, under key,
// and the cursor of the next page when there is one. ok is false when q has
// been answered with the error.
func readPage[T, S any](q *request, key string, fetch func(cursor string) ([]T, string, error), show func(T) S) (res map[string]any, ok bool) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return nil, false
	}
	items, next, err := fetch(p.Cursor)
	if err != nil {
		q.fail(q.h.backendError(err, errInvalidParams("cursor", "is not a cursor of this server")))
		return nil, false
	}
	shown := make([]S, len(items))
	for i, t := range items {
		shown[i] = show(t)
	}
	res = map[string]any{key: shown}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, true
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

// call starts the task of a tool call, as a task-augmented call of
// 2025-11-25 (with the ttl it asks for) when asTask. Arguments outside the
// tool's schema are a tool error the model can correct (toolErr set), not a
// protocol error; but a task-augmented call's answer is a task or an error,
// and a client that asked for a task reads no CallToolResult, so there they
// are invalid params, naming each field as well.
func (h *handler) call(q *request, p callParams, asTask bool) (t Task, toolErr *callToolResult, e *rpcError) {
	var ttl *int64
	if asTask {
		ttl = p.Task.TTL
	}
	t, err := h.cfg.Backend.Call(q.r.Context(), q.p, Call{Tool: p.Name, Arguments: p.Arguments, TTLMs: ttl})
	var verr *problem.ValidationError
	if errors.As(err, &verr) && (verr.Field == "arguments" || strings.HasPrefix(verr.Field, "arguments.") || strings.HasPrefix(verr.Field, "arguments[")) {
		if asTask {
			return t, nil, errInvalidParams(verr.Field, verr.Message)
		}
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
