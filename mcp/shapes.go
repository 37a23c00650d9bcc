package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/api/wire"
)

// Names the protocol reserves that this face uses.
const (
	extTasks        = "io.modelcontextprotocol/tasks"           // the tasks extension of the stateless generation
	metaVersion     = "io.modelcontextprotocol/protocolVersion" // a stateless request's version
	metaCaps        = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo  = "io.modelcontextprotocol/serverInfo"
	metaRelatedTask = "io.modelcontextprotocol/related-task" // ties a message to a task (2025-11-25)
	metaSubID       = "io.modelcontextprotocol/subscriptionId"
	resultComplete  = "complete"
	resultTask      = "task"
	resultInput     = "input_required"
	methodElicit    = "elicitation/create"
	elicitForm      = "form"
	elicitURL       = "url"
	taskSupportOpt  = "optional"
	answerFieldOpt  = "optionId" // the form field that carries the chosen option
	answerFieldText = "text"     // the form field that carries free text
)

// callToolResult is a tool call's result: the task's result as JSON text,
// and as structured content when it is an object.
type callToolResult struct {
	ResultType        string              `json:"resultType,omitempty"` // the stateless generation only
	Content           []*sdk.TextContent  `json:"content"`
	StructuredContent json.RawMessage     `json:"structuredContent,omitempty"`
	IsError           bool                `json:"isError,omitempty"`
	Meta              map[string]any      `json:"_meta,omitempty"`
	InputRequests     map[string]inputReq `json:"inputRequests,omitempty"` // an input_required result
	RequestState      string              `json:"requestState,omitempty"`
}

// inputReq is a request to the client: elicitation/create, the only kind
// this server asks.
type inputReq struct {
	Method string            `json:"method"`
	Params *sdk.ElicitParams `json:"params"`
}

// toolResult is the CallToolResult of an ended task. A failed task is a
// tool error with its message; a cancelled one says so, with the reason.
func toolResult(t Task, modern bool) callToolResult {
	var res callToolResult
	if modern {
		res.ResultType = resultComplete
	}
	switch t.Status {
	case wire.StatusCompleted:
		text := t.Result
		if len(text) == 0 {
			text = json.RawMessage("null")
		}
		res.Content = []*sdk.TextContent{{Text: string(text)}}
		if trimmed := bytes.TrimSpace(t.Result); len(trimmed) > 0 && trimmed[0] == '{' {
			res.StructuredContent = t.Result
		}
	case wire.StatusFailed:
		msg := "the task failed"
		if t.Error != nil && t.Error.Message != "" {
			msg = t.Error.Message
		}
		res.Content, res.IsError = []*sdk.TextContent{{Text: msg}}, true
	default:
		msg := "the task was cancelled"
		if t.CancelReason != "" {
			msg += ": " + t.CancelReason
		}
		res.Content, res.IsError = []*sdk.TextContent{{Text: msg}}, true
	}
	return res
}

// taskError is a failed task's error as the stateless generation shows it:
// the JSON-RPC error the call ended in.
func taskError(t Task) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task failed"}
	if t.Error != nil {
		if t.Error.Message != "" {
			e.Message = t.Error.Message
		}
		e.Data = t.Error.Data
	}
	return e
}

// statusMessage is the task's status message, or, when it has none, what
// its status says: the open question, the failure, the cancel reason.
func statusMessage(t Task) string {
	if t.StatusMessage != "" {
		return t.StatusMessage
	}
	switch t.Status {
	case wire.StatusInputRequired:
		if len(t.InputRequests) > 0 {
			return t.InputRequests[0].Prompt
		}
	case wire.StatusFailed:
		if t.Error != nil {
			return t.Error.Message
		}
	case wire.StatusCancelled:
		return t.CancelReason
	}
	return ""
}

// modernTask is a task as the tasks extension shows it: the Task of
// CreateTaskResult, and the detailed task of tasks/get and
// notifications/tasks (inputRequests while input_required, result once
// completed, error once failed).
type modernTask struct {
	ResultType     string          `json:"resultType,omitempty"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         *callToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
	Meta           map[string]any  `json:"_meta,omitempty"`
}

func newModernTask(t Task, resultType string, detailed bool) modernTask {
	mt := modernTask{ResultType: resultType, TaskID: t.TaskID, Status: t.Status, StatusMessage: statusMessage(t),
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, TTLMs: t.TTLMs, PollIntervalMs: t.PollIntervalMs}
	if !detailed {
		return mt
	}
	switch t.Status {
	case wire.StatusInputRequired:
		reqs := make(map[string]inputReq, len(t.InputRequests))
		for _, r := range t.InputRequests {
			reqs[r.RequestID] = inputReq{Method: methodElicit, Params: elicitParams(r, true)}
		}
		mt.InputRequests, _ = json.Marshal(reqs)
	case wire.StatusCompleted:
		res := toolResult(t, true)
		mt.Result = &res
	case wire.StatusFailed:
		mt.Error = taskError(t)
	}
	return mt
}

// legacyTask is a task as the 2025-11-25 tasks utility shows it.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

func newLegacyTask(t Task) legacyTask {
	return legacyTask{TaskID: t.TaskID, Status: t.Status, StatusMessage: statusMessage(t), CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTLMs, PollInterval: t.PollIntervalMs}
}

// elicitParams is an input request as an elicitation: a sign-in is a URL
// the person opens; a question is a form with the options to choose from
// (field optionId) and, where the request takes free text, a text field.
// The 2025-11-25 generation names a URL elicitation by an elicitationId.
func elicitParams(r wire.InputRequest, modern bool) *sdk.ElicitParams {
	if r.Kind == wire.KindAuthorization {
		p := &sdk.ElicitParams{Mode: elicitURL, Message: r.Prompt, URL: r.AuthorizationURL}
		if !modern {
			p.ElicitationID = r.RequestID
		}
		return p
	}
	props := map[string]any{}
	var required []string
	freeText := r.AllowFreeform || r.Display == wire.DisplayText
	if len(r.Options) > 0 {
		choices := make([]map[string]string, len(r.Options))
		for i, o := range r.Options {
			title := o.Label
			if o.Description != "" {
				title += " (" + o.Description + ")"
			}
			choices[i] = map[string]string{"const": o.ID, "title": title}
		}
		props[answerFieldOpt] = map[string]any{"type": "string", "title": "Choice", "oneOf": choices}
		if !freeText {
			required = append(required, answerFieldOpt)
		}
	}
	if freeText {
		props[answerFieldText] = map[string]any{"type": "string", "title": "Answer"}
		if len(r.Options) == 0 {
			required = append(required, answerFieldText)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return &sdk.ElicitParams{Mode: elicitForm, Message: r.Prompt, RequestedSchema: schema}
}

// mcpTool is a tool as tools/list shows it; execution (2025-11-25) says a
// call may be task-augmented.
type mcpTool struct {
	sdk.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

func newTool(t Tool, taskSupport bool) mcpTool {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	mt := mcpTool{Tool: sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}}
	if len(t.OutputSchema) > 0 {
		mt.OutputSchema = t.OutputSchema
	}
	if taskSupport {
		mt.Execution = &toolExecution{TaskSupport: taskSupportOpt}
	}
	return mt
}
