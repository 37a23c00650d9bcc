package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Tool is a published tool. Its fields:
//
//	Name, Title, Description     string
//	InputSchema, OutputSchema    json.RawMessage // JSON Schema (draft 2020-12) objects
//	Executor                     string          // the principal that published it and executes its calls
//	Callers                      []string        // ["*"] for everyone, else who may call it besides its executor
//	Endpoint                     *Endpoint       // only to its executor; the secret only in the put that made it
//	CreatedAt, LastUpdatedAt     time.Time
type Tool = wire.Tool[time.Time]

// PutToolInput is the body of PUT /v1/tools/{name}. Its fields:
//
//	Title, Description         string
//	InputSchema, OutputSchema  any              // JSON Schema objects; InputSchema describes an object
//	Callers                    []string         // nil: the executor alone; ToolCallersAll: everyone
//	Endpoint                   *EndpointRequest // where the executor hears of calls (default kinds DefaultToolKinds)
type PutToolInput = wire.PutTool[any]

// CallToolInput is the body of POST /v1/tools/{name}/call. Its fields:
//
//	Arguments  any    // an object the tool's input schema accepts
//	SessionID  string // "": the caller's default session
//	Label      string
//	TTLMs      *int64
//	Requester  string
//	Notify     []EndpointRequest
type CallToolInput = wire.CallTool[any]

// ToolCallersAll opens a tool to everyone: Callers: []string{ToolCallersAll}.
const ToolCallersAll = wire.ToolCallersAll

// DefaultToolKinds are the event types a tool's endpoint that names none
// gets, for each task started through the tool.
var DefaultToolKinds = wire.DefaultToolKinds

// PutTool publishes the tool name, or replaces the caller's own; created
// says which. The answer shows the endpoint's secret, once.
func (c *Client) PutTool(ctx context.Context, name string, in PutToolInput, opts ...CallOption) (tool *Tool, created bool, err error) {
	var out Tool
	status, err := c.do(ctx, http.MethodPut, toolPath(name, ""), nil, in, &out, opts)
	if err != nil {
		return nil, false, err
	}
	return &out, status == http.StatusCreated, nil
}

// GetTool reads a tool the caller may call or publishes.
func (c *Client) GetTool(ctx context.Context, name string, opts ...CallOption) (*Tool, error) {
	return fetch[Tool](ctx, c, http.MethodGet, toolPath(name, ""), nil, nil, opts)
}

// ListToolsParams pages GET /v1/tools.
type ListToolsParams struct {
	Limit  int    // 0: the server's default
	Cursor string // NextCursor of the previous page
}

// ListTools lists the tools the caller may call or publishes, newest first.
func (c *Client) ListTools(ctx context.Context, p ListToolsParams, opts ...CallOption) (*Page[Tool], error) {
	q := url.Values{}
	setPaging(q, p.Limit, p.Cursor)
	return fetch[Page[Tool]](ctx, c, http.MethodGet, "/v1/tools", q, nil, opts)
}

// DeleteTool removes a tool the caller published and returns it as it was.
// Tasks started through it go on.
func (c *Client) DeleteTool(ctx context.Context, name string, opts ...CallOption) (*Tool, error) {
	return fetch[Tool](ctx, c, http.MethodDelete, toolPath(name, ""), nil, nil, opts)
}

// CallTool starts a task through a tool: the caller owns it, the tool's
// executor executes it, its kind is the tool's name and its input the
// arguments.
func (c *Client) CallTool(ctx context.Context, name string, in CallToolInput, opts ...CallOption) (*Task, error) {
	return fetch[Task](ctx, c, http.MethodPost, toolPath(name, "/call"), nil, in, opts)
}

func toolPath(name, suffix string) string { return "/v1/tools/" + segment(name) + suffix }
