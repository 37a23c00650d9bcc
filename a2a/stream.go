package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// streamKinds are the log events a stream turns into A2A events: each
// carries the task as the change left it.
var streamKinds = waits.Kinds{wire.EventTaskStatus, wire.EventTaskMessage, wire.EventTaskTerminal}

// streamWait is how long one read of a stream waits for an event before it
// looks again (the transports send keep-alives meanwhile).
const streamWait = 15 * time.Second

// logEvent is an event of the task's log, with the task it carries.
type logEvent struct {
	Type     string `json:"type"`
	Revision int64  `json:"revision"`
	Data     struct {
		Task *tasks.Task     `json:"task"`
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	} `json:"data"`
}

// SubscribeToTask streams a live task: the task first, then a status update
// for each change of state and each message, and the result as an artifact
// update before the last status; it ends after the task has ended. A task
// that has already ended is refused as the A2A specification asks
// (UnsupportedOperation): GetTask reads it.
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return h.stream(ctx, "SubscribeToTask", false, func(p authz.Principal) (tasks.Task, error) {
		t, _, err := h.tasks.Get(ctx, p, string(req.ID))
		if err == nil && t.Status.Terminal() {
			return t, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s: subscribe to a live task, read an ended one with GetTask", t.TaskID, t.Status))
		}
		return t, err
	})
}

// stream is a streaming method: the task start gives the caller, then its
// changes as follow yields them. method names it for done.
func (h *handler) stream(ctx context.Context, method string, untilInput bool,
	start func(authz.Principal) (tasks.Task, error)) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var err error
		defer h.done(ctx, method, &err)
		p, err := principal(ctx)
		if err != nil {
			yield(nil, h.protocolError(ctx, err))
			return
		}
		t, err := start(p)
		if err != nil {
			yield(nil, h.protocolError(ctx, err))
			return
		}
		if !yield(shape(t, nil), nil) || t.Status.Terminal() {
			return
		}
		err = h.follow(ctx, p, t, untilInput, yield)
	}
}

// follow yields the A2A events of the task's changes after t, read from the
// task's log, until the task ends, the caller or the server leaves, or, with
// untilInput, the task waits for input. Changes at or before t's revision
// were shown already and are passed over. The error is the one yielded, if
// any.
func (h *handler) follow(ctx context.Context, p authz.Principal, t tasks.Task, untilInput bool,
	yield func(a2a.Event, error) bool) error {
	known, after := t.Revision, ""
	draining := h.tasks.Draining()
	for {
		page, err := h.tasks.PollEvents(ctx, p, t.TaskID, waits.LogQuery{After: after, Limit: 100, Wait: streamWait, Kinds: streamKinds}).Wait(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			err = h.protocolError(ctx, err)
			yield(nil, err)
			return err
		}
		for _, e := range page.Entries {
			var ev logEvent
			if json.Unmarshal(e.JSON, &ev) != nil || ev.Data.Task == nil || ev.Revision <= known {
				continue
			}
			known = ev.Revision
			now := *ev.Data.Task
			for _, out := range events(ev, now) {
				if !yield(out, nil) {
					return nil
				}
			}
			if now.Status.Terminal() || untilInput && now.Status == tasks.InputRequired {
				return nil
			}
		}
		after = page.Cursor
		select {
		case <-ctx.Done():
			return nil
		case <-draining:
			return nil
		default:
		}
	}
}

// events are the A2A events of one change of the task: a status update
// (with the message a task.message posted), the result first when it
// completed.
func events(ev logEvent, t tasks.Task) []a2a.Event {
	st := status(t)
	if ev.Type == wire.EventTaskMessage {
		st.Message = posted(t, ev.Revision, ev.Data.Text, ev.Data.Data)
	}
	update := &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(t.TaskID), ContextID: t.SessionID, Status: st}
	if a := artifact(t); a != nil {
		return []a2a.Event{&a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(t.TaskID), ContextID: t.SessionID,
			Artifact: a, LastChunk: true}, update}
	}
	return []a2a.Event{update}
}
