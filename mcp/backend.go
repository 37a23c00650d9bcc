package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
)

// Task is a task as the services show it (the record of the contract's
// section 3), its timestamps as the RFC 3339 strings the API writes.
type Task = wire.Task[string, string]

// Tool is a published tool as a caller sees it.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage // a JSON Schema object
	OutputSchema json.RawMessage // nil when the tool has none
}

// ToolPage is one page of the tools a principal may call.
type ToolPage struct {
	Tools []Tool
	Next  string // the cursor of the next page; "" on the last
}

// TaskPage is one page of the tasks a principal owns, newest first.
type TaskPage struct {
	Tasks []Task
	Next  string // the cursor of the next page; "" on the last
}

// Call is a tool call as an MCP client makes it.
type Call struct {
	Tool      string
	Arguments json.RawMessage // a JSON object; {} when the client sent none
	TTLMs     *int64          // the task's time to live the client asked for, if any
}

// Backend is what the MCP face needs of the services. Every method acts as
// the principal it is given and sees only what that principal may see: a
// task or tool the principal may not see is problem.ErrNotFound, exactly as
// a missing one.
//
// Errors the face reads: problem.ErrNotFound; *problem.ValidationError (the
// request can never succeed as sent); ErrUnavailable (the store is down or
// busy: the client may retry); ErrEnded from Cancel; ErrNotOpen from
// Answer. Any other error is an internal one: logged, never shown.
type Backend interface {
	// Tools lists the tools p may call, a page after cursor ("" for the
	// first). A cursor the backend did not make is a ValidationError.
	Tools(ctx context.Context, p authz.Principal, cursor string) (ToolPage, error)
	// Call starts a task by calling a tool as p (the task's owner; the
	// tool's publisher executes it). It returns once the task is durable:
	// a Task right after it finds it. Arguments outside the tool's input
	// schema are a ValidationError whose Field starts with "arguments".
	Call(ctx context.Context, p authz.Principal, c Call) (Task, error)
	// Task reads a task p owns, executes or is the requester of.
	Task(ctx context.Context, p authz.Principal, taskID string) (Task, error)
	// Tasks lists the tasks p owns, newest first, a page after cursor.
	Tasks(ctx context.Context, p authz.Principal, cursor string) (TaskPage, error)
	// Cancel cancels a task p owns and returns it as the cancel left it.
	// A task that had ended before is returned with ErrEnded (wrapped or
	// not), unchanged.
	Cancel(ctx context.Context, p authz.Principal, taskID string) (Task, error)
	// Answer answers open input requests of a task as p, through MCP
	// (InputResponse.via "mcp"), all or none. ErrNotOpen says a request
	// was answered or closed meanwhile: nothing was recorded.
	Answer(ctx context.Context, p authz.Principal, taskID string, answers []wire.Answer) (Task, error)
	// Watch begins a wait on a task p may read: its first read made, and a
	// wait ahead unless the task is past afterRevision already (or the read
	// failed). The wait answers with the task once its revision passes
	// afterRevision, or, with the task as then known, when the backend's
	// longest wait runs out, the caller leaves or the server drains.
	Watch(ctx context.Context, p authz.Principal, taskID string, afterRevision int64) Watch
}

// A Watch is a wait on a task, begun. Either its answer is there already
// (Waits is false), or it waits for it: blocking the caller (Wait) or
// parked, holding no goroutine (Park).
type Watch interface {
	Waits() bool
	// Wait blocks until the answer; ctx ending is the caller leaving.
	Wait(ctx context.Context) (Task, error)
	// Park calls answer once with the answer: at once when the watch does
	// not wait, else later, on a goroutine of the backend's. ctx is that of
	// the reads the wait makes; Leave, not ctx ending, says the caller left.
	Park(ctx context.Context, answer func(Task, error))
	// Leave tells a parked watch its caller has left: it answers at once.
	Leave()
}

// Refusals a Backend returns besides those of package problem.
var (
	// ErrUnavailable is the store being down, slow or busy: the client
	// gets -32603 with a retry hint (HTTP 503 with Retry-After).
	ErrUnavailable = errors.New("store unavailable")
	// ErrEnded is a cancel of a task that had ended already.
	ErrEnded = errors.New("the task has ended")
	// ErrNotOpen is an answer to an input request that is no longer open.
	ErrNotOpen = errors.New("the input request is no longer open")
)

// Held is an answer that waits on a task and is written as one JSON body:
// a held tasks/result, or a tools/call from a client that takes no task.
// Config.Park may hold it with no goroutine; without it, the handler
// drives it itself. A Held keeps nothing of the request it came from.
type Held interface {
	// Begin begins the next wait.
	Begin(ctx context.Context) Watch
	// Step takes the answer of that wait: whether to begin another.
	Step(t Task, err error) (again bool)
	// Write writes the answer, once Step has said no more.
	Write(w http.ResponseWriter)
}

// Parker holds a Held request off the handler: it takes over w and r (their
// body has been read), drives h (Begin, park the Watch, Step, again until
// Step says no more) and has h Write the answer as the handler would have;
// once the client has left it begins no further wait. It reports false, having changed nothing, when it cannot hold this
// request: the handler then drives h itself.
type Parker func(w http.ResponseWriter, r *http.Request, h Held) bool
