package a2a

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/tasks"
)

// Page sizes of ListTasks.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// GetTask answers the task, with its history when historyLength asks.
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (_ *a2a.Task, err error) {
	defer h.done(ctx, "GetTask", &err)
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, _, err := h.tasks.Get(ctx, p, string(req.ID))
	if err != nil {
		return nil, err
	}
	return h.withHistory(ctx, p, t, req.HistoryLength)
}

// withHistory is the task in A2A's shape with its last historyLength
// messages, when asked for some.
func (h *handler) withHistory(ctx context.Context, p authz.Principal, t tasks.Task, historyLength *int) (*a2a.Task, error) {
	if historyLength == nil || *historyLength <= 0 {
		return shape(t, nil), nil
	}
	history, err := h.history(ctx, p, t, *historyLength)
	if err != nil {
		return nil, err
	}
	return shape(t, history), nil
}

// ListTasks pages through the caller's tasks, newest first, in a context
// (session) and a state when given. nextPageToken is "" on the last page;
// totalSize counts the tasks of this page, as the full count is not kept.
func (h *handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (_ *a2a.ListTasksResponse, err error) {
	defer h.done(ctx, "ListTasks", &err)
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	size := req.PageSize
	switch {
	case size == 0:
		size = defaultPageSize
	case size < 0 || size > maxPageSize:
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize: must be 1 to %d", maxPageSize))
	}
	want, ok := statuses(req.Status)
	if !ok {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "status: not a task state")
	}
	out := &a2a.ListTasksResponse{Tasks: []*a2a.Task{}, PageSize: size}
	if want != nil && len(want) == 0 {
		return out, nil // a state no task here is ever in
	}
	f := tasks.ListFilter{SessionID: req.ContextID}
	if len(want) == 1 {
		f.Status = want[0]
	}
	var page paging.Page
	page, err = h.tasks.List(ctx, p, f, req.PageToken, size)
	if err != nil {
		return nil, err
	}
	for _, raw := range page.Items {
		var t tasks.Task
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("a listed task: %w", err)
		}
		// AUTH_REQUIRED and INPUT_REQUIRED share a status: the state tells them apart.
		if req.Status != a2a.TaskStateUnspecified && state(t) != req.Status {
			continue
		}
		shown, err := h.withHistory(ctx, p, t, req.HistoryLength)
		if err != nil {
			return nil, err
		}
		if !req.IncludeArtifacts {
			shown.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, shown)
	}
	out.NextPageToken = page.Next
	out.TotalSize = len(out.Tasks)
	return out, nil
}

// CancelTask cancels a live task as its owner; an ended one is
// TaskNotCancelable.
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (_ *a2a.Task, err error) {
	defer h.done(ctx, "CancelTask", &err)
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	reply, err := h.tasks.Run(ctx, p, string(req.ID), tasks.Command{Kind: tasks.CmdCancel, Reason: "cancelled through A2A", LiveOnly: true}, idem.Key{})
	if ended, ok := tasks.Ended(err); ok {
		return nil, notCancelable(ended)
	}
	if err != nil {
		return nil, err
	}
	t, err := decode(reply.JSON)
	if err != nil {
		return nil, err
	}
	return shape(t, nil), nil
}

// notCancelable is the refusal to cancel an ended task.
func notCancelable(t tasks.Task) error {
	return a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s is %s", t.TaskID, t.Status))
}
