package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/mcp"
	"github.com/taskhook/taskhook/problem"
)

// memBackend is an in-memory double of mcp.Backend for the protocol tests:
// the task rules it keeps are only those the face relies on (who may see
// and change a task, answers to open requests, the ended task's cancel).
// The services' own rules are tested over Redis where they live.
type memBackend struct {
	mu          sync.Mutex
	tools       []memTool
	tasks       map[string]*memTask
	order       []string // task ids, oldest first
	unavailable bool
	broken      error // every call fails with it, when set
	// waiting gets the id of each task a Watch begins to wait on: a test
	// acts once the face waits, never after a sleep.
	waiting chan string
}

type memTool struct {
	mcp.Tool
	publisher string
	callers   []string // "*" for anybody
	required  []string // arguments the schema requires, as strings
}

type memTask struct {
	task      mcp.Task
	executor  string
	changed   chan struct{} // closed and replaced at every change
	answerBys []string
}

var _ mcp.Backend = (*memBackend)(nil)

func newMemBackend() *memBackend {
	return &memBackend{tasks: map[string]*memTask{}, waiting: make(chan string, 64)}
}

func (b *memBackend) addTool(t memTool) { b.mu.Lock(); b.tools = append(b.tools, t); b.mu.Unlock() }

func (b *memBackend) down(yes bool) { b.mu.Lock(); b.unavailable = yes; b.mu.Unlock() }

func (b *memBackend) check() error {
	if b.unavailable {
		return fmt.Errorf("redis: connection refused: %w", mcp.ErrUnavailable)
	}
	return b.broken
}

func mayCall(t memTool, p authz.Principal) bool {
	return slices.Contains(t.callers, "*") || slices.Contains(t.callers, p.ID) || t.publisher == p.ID
}

// page cuts items after cursor ("" or "c:N") into pages of two.
func page[T any](items []T, cursor string) ([]T, string, error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "c:"))
		if !strings.HasPrefix(cursor, "c:") || err != nil || n < 0 || n > len(items) {
			return nil, "", problem.Invalid("cursor", "is not a cursor of this server")
		}
		start = n
	}
	end := min(start+2, len(items))
	next := ""
	if end < len(items) {
		next = "c:" + strconv.Itoa(end)
	}
	return items[start:end], next, nil
}

// listPage is the page after cursor of what mine lists, read under the
// backend's lock once its check passes.
func listPage[T any](b *memBackend, cursor string, mine func() []T) ([]T, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return nil, "", err
	}
	return page(mine(), cursor)
}

func (b *memBackend) Tools(_ context.Context, p authz.Principal, cursor string) (mcp.ToolPage, error) {
	tools, next, err := listPage(b, cursor, func() (mine []mcp.Tool) {
		for _, t := range b.tools {
			if mayCall(t, p) {
				mine = append(mine, t.Tool)
			}
		}
		return mine
	})
	return mcp.ToolPage{Tools: tools, Next: next}, err
}

func (b *memBackend) Call(_ context.Context, p authz.Principal, c mcp.Call) (mcp.Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(); err != nil {
		return mcp.Task{}, err
	}
	i := slices.IndexFunc(b.tools, func(t memTool) bool { return t.Name == c.Tool && mayCall(t, p) })
	if i < 0 {
		return mcp.Task{}, problem.ErrNotFound
	}
	tool := b.tools[i]
	var args map[string]any
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return mcp.Task{}, problem.Invalid("arguments", "must be an object")
	}
	for _, name := range tool.required {
		if _, ok := args[name].(string); !ok {
			return mcp.Task{}, problem.Invalid("arguments."+name, "is required, a string")
		}
	}
	ttl := int64(604800000)
	if c.TTLMs != nil {
		ttl = *c.TTLMs
	}
	id := fmt.Sprintf("task_%02d", len(b.order)+1)
	t := mcp.Task{TaskID: id, SessionID: "ses_1", Owner: p.ID, Requester: p.ID, Status: wire.StatusWorking,
		Revision: 1, Kind: tool.Name, Input: c.Arguments, InputResponses: []wire.InputResponse[string]{},
		CreatedAt: "2026-11-30T10:19:24.676Z", LastUpdatedAt: "2026-11-30T10:19:24.676Z", TTLMs: &ttl, PollIntervalMs: 5000}
	b.tasks[id] = &memTask{task: t, executor: tool.publisher, changed: make(chan struct{})}
	b.order = append(b.order, id)
	return t, nil
}

// readable is the task p may read: as owner, executor or requester.
func (b *memBackend) readable(p authz.Principal, id string) (*memTask, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	mt, ok := b.tasks[id]
	if !ok || (p.ID != mt.task.Owner && p.ID != mt.executor && p.ID != mt.task.Requester) {
		return nil, problem.ErrNotFound
	}
	return mt, nil
}

func (b *memBackend) Task(_ context.Context, p authz.Principal, id string) (mcp.Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	mt, err := b.readable(p, id)
	if err != nil {
		return mcp.Task{}, err
	}
	return mt.task, nil
}

func (b *memBackend) Tasks(_ context.Context, p authz.Principal, cursor string) (mcp.TaskPage, error) {
	tasks, next, err := listPage(b, cursor, func() (mine []mcp.Task) {
		for i := len(b.order) - 1; i >= 0; i-- {
			if t := b.tasks[b.order[i]].task; t.Owner == p.ID {
				mine = append(mine, t)
			}
		}
		return mine
	})
	return mcp.TaskPage{Tasks: tasks, Next: next}, err
}

func (b *memBackend) Cancel(_ context.Context, p authz.Principal, id string) (mcp.Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	mt, err := b.readable(p, id)
	if err != nil || mt.task.Owner != p.ID {
		return mcp.Task{}, problem.ErrNotFound
	}
	if wire.Terminal(mt.task.Status) {
		return mt.task, mcp.ErrEnded
	}
	b.changeLocked(mt, func(t *mcp.Task) {
		t.Status, t.CancelReason, t.InputRequests = wire.StatusCancelled, "cancelled through MCP", nil
	})
	return mt.task, nil
}

func (b *memBackend) Answer(_ context.Context, p authz.Principal, id string, answers []wire.Answer) (mcp.Task, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	mt, err := b.readable(p, id)
	if err != nil || (p.ID != mt.task.Owner && p.ID != mt.task.Requester) {
		return mcp.Task{}, problem.ErrNotFound
	}
	for i, a := range answers {
		j := slices.IndexFunc(mt.task.InputRequests, func(r wire.InputRequest) bool { return r.RequestID == a.RequestID })
		if j < 0 {
			return mcp.Task{}, mcp.ErrNotOpen
		}
		r := mt.task.InputRequests[j]
		if a.OptionID != "" && !slices.ContainsFunc(r.Options, func(o wire.Option) bool { return o.ID == a.OptionID }) {
			return mcp.Task{}, problem.Invalid(fmt.Sprintf("responses[%d].optionId", i), "is not an option of %s", r.RequestID)
		}
	}
	b.changeLocked(mt, func(t *mcp.Task) {
		for _, a := range answers {
			t.InputResponses = append(t.InputResponses, wire.InputResponse[string]{Answer: a, AnsweredBy: p.ID,
				AnsweredAt: "2026-11-30T10:20:00.000Z", Via: wire.ViaMCP})
			t.InputRequests = slices.DeleteFunc(t.InputRequests, func(r wire.InputRequest) bool { return r.RequestID == a.RequestID })
		}
		if len(t.InputRequests) == 0 {
			t.Status, t.InputRequests = wire.StatusWorking, nil
		}
	})
	return mt.task, nil
}

// change applies an executor's change to a task and wakes its watchers.
func (b *memBackend) change(id string, f func(*mcp.Task)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.changeLocked(b.tasks[id], f)
}

func (b *memBackend) changeLocked(mt *memTask, f func(*mcp.Task)) {
	f(&mt.task)
	mt.task.Revision++
	mt.task.LastUpdatedAt = fmt.Sprintf("2026-11-30T10:2%d:00.000Z", mt.task.Revision%10)
	close(mt.changed)
	mt.changed = make(chan struct{})
}

func (b *memBackend) ask(id string, reqs ...wire.InputRequest) {
	b.change(id, func(t *mcp.Task) {
		for i := range reqs {
			if reqs[i].Kind == "" {
				reqs[i].Kind = wire.KindAsk
			}
			if reqs[i].Kind == wire.KindAsk {
				reqs[i].AnswerURL = "http://localhost:8080/v1/input/ans_" + reqs[i].RequestID
			}
		}
		t.Status, t.InputRequests = wire.StatusInputRequired, append(t.InputRequests, reqs...)
	})
}

func (b *memBackend) complete(id string, result string) {
	b.change(id, func(t *mcp.Task) {
		t.Status, t.Result, t.InputRequests = wire.StatusCompleted, json.RawMessage(result), nil
	})
}

func (b *memBackend) fail(id, msg string) {
	b.change(id, func(t *mcp.Task) {
		t.Status, t.Error, t.InputRequests = wire.StatusFailed, &wire.TaskError{Message: msg}, nil
	})
}

func (b *memBackend) stored(id string) mcp.Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tasks[id].task
}

// Watch waits on the task's change channel. A double may hold a goroutine
// for a parked watch; the services' watches do not.
func (b *memBackend) Watch(_ context.Context, p authz.Principal, id string, after int64) mcp.Watch {
	b.mu.Lock()
	defer b.mu.Unlock()
	mt, err := b.readable(p, id)
	if err != nil {
		return &memWatch{err: err}
	}
	w := &memWatch{b: b, p: p, id: id, task: mt.task, leave: make(chan struct{})}
	if mt.task.Revision > after {
		return w
	}
	w.waits, w.changed = true, mt.changed
	select {
	case b.waiting <- id:
	default:
	}
	return w
}

type memWatch struct {
	b       *memBackend
	p       authz.Principal
	id      string
	task    mcp.Task
	err     error
	waits   bool
	changed chan struct{}
	leave   chan struct{}
	once    sync.Once
}

func (w *memWatch) Waits() bool { return w.waits }

func (w *memWatch) Wait(ctx context.Context) (mcp.Task, error) {
	if !w.waits {
		return w.task, w.err
	}
	select {
	case <-w.changed:
		return w.b.Task(ctx, w.p, w.id)
	case <-ctx.Done():
	case <-w.leave:
	}
	return w.task, nil
}

func (w *memWatch) Park(ctx context.Context, answer func(mcp.Task, error)) {
	if !w.waits {
		answer(w.task, w.err)
		return
	}
	go func() { answer(w.Wait(context.WithoutCancel(ctx))) }()
}

func (w *memWatch) Leave() {
	if w.leave != nil {
		w.once.Do(func() { close(w.leave) })
	}
}
