package wire

import "encoding/json"

// ToolCallersAll is the callers list of a tool anyone may call: ["*"].
const ToolCallersAll = "*"

// DefaultToolKinds are the event types a tool's endpoint that names none is
// sent, for every task started through the tool: new work, answers, and the
// end (a cancel among them).
var DefaultToolKinds = []string{EventTaskCreated, EventInputResolved, EventTaskTerminal}

// Tool is a published tool as the API shows it. T is the Go type of its
// timestamps. Endpoint is shown to the tool's executor only, its secret only
// in the answer that created it.
type Tool[T any] struct {
	Name          string          `json:"name"`
	Title         string          `json:"title,omitempty"`
	Description   string          `json:"description"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	OutputSchema  json.RawMessage `json:"outputSchema,omitempty"`
	Executor      string          `json:"executor"`
	Callers       []string        `json:"callers"` // ["*"], or the principals who may call it besides its executor
	Endpoint      *Endpoint       `json:"endpoint,omitempty"`
	CreatedAt     T               `json:"createdAt"`
	LastUpdatedAt T               `json:"lastUpdatedAt"`
}

// PutTool is the body of PUT /v1/tools/{name}. J is the Go type of the
// schemas (see the package doc). Callers left out means none but the
// executor.
type PutTool[J any] struct {
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description"`
	InputSchema  J                `json:"inputSchema"`
	OutputSchema J                `json:"outputSchema,omitempty"`
	Callers      []string         `json:"callers,omitempty"`
	Endpoint     *EndpointRequest `json:"endpoint"`
}

// CallTool is the body of POST /v1/tools/{name}/call. J is the Go type of
// Arguments. Without SessionID the task goes to the caller's default
// session.
type CallTool[J any] struct {
	Arguments J                 `json:"arguments"`
	SessionID string            `json:"sessionId,omitempty"`
	Label     string            `json:"label,omitempty"`
	TTLMs     *int64            `json:"ttlMs,omitempty"`
	Requester string            `json:"requester,omitempty"`
	Notify    []EndpointRequest `json:"notify,omitempty"` // the answer shows each one's secret, once
}
