package mcp

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"
)

// maxListenTasks bounds the tasks one subscriptions/listen follows.
const maxListenTasks = 100

// listen answers subscriptions/listen: a stream that acknowledges the task
// ids the caller may read, then sends notifications/tasks with each one's
// state, and again at every change, until the client leaves, every task has
// ended, or the server drains (then it answers, ending the subscription).
func (h *handler) listen(q *request) {
	var p struct {
		Notifications *struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(e)
		return
	}
	if p.Notifications == nil {
		q.fail(errInvalidParams("notifications", "is required"))
		return
	}
	ids := p.Notifications.TaskIDs
	if len(ids) > 0 && !q.caps.tasks {
		q.fail(errNeedsTasks())
		return
	}
	if len(ids) > maxListenTasks {
		q.fail(errInvalidParams("notifications.taskIds", fmt.Sprintf("at most %d", maxListenTasks)))
		return
	}
	if !q.canStream {
		q.fail(errInvalidRequest("subscriptions/listen answers with a stream: Accept must allow text/event-stream"))
		return
	}
	ctx := q.r.Context()
	tasks := map[string]Task{}
	accepted := []string{}
	for _, id := range ids {
		if _, dup := tasks[id]; dup {
			continue
		}
		t, err := h.cfg.Backend.Task(ctx, q.p, id)
		if errors.Is(err, problem.ErrNotFound) {
			continue // not the caller's: not acknowledged, as a missing one
		}
		if err != nil {
			q.fail(h.backendError(err, errNoSuchTask()))
			return
		}
		tasks[id] = t
		accepted = append(accepted, id)
	}
	sort.Strings(accepted)
	subMeta := map[string]any{metaSubID: q.m.id}
	q.beginStream()
	_ = q.notify("", "notifications/subscriptions/acknowledged",
		map[string]any{"_meta": subMeta, "notifications": map[string]any{"taskIds": accepted}})
	send := func(t Task) {
		mt := newModernTask(t, "", true)
		mt.Meta = subMeta
		_ = q.notify("", "notifications/tasks", mt)
	}
	type answer struct {
		t   Task
		err error
	}
	answers := make(chan answer, len(accepted))
	watches := map[string]Watch{}
	watch := func(t Task) {
		w := h.cfg.Backend.Watch(ctx, q.p, t.TaskID, t.Revision)
		watches[t.TaskID] = w
		id := t.TaskID
		w.Park(ctx, func(t Task, err error) {
			if t.TaskID == "" {
				t.TaskID = id
			}
			answers <- answer{t, err}
		})
	}
	for _, id := range accepted {
		send(tasks[id])
		if !wire.Terminal(tasks[id].Status) {
			watch(tasks[id])
		}
	}
	tick := time.NewTicker(h.cfg.Heartbeat)
	defer tick.Stop()
	leave := func() {
		for _, w := range watches {
			w.Leave()
		}
		for range watches {
			<-answers
		}
	}
	for len(watches) > 0 {
		select {
		case a := <-answers:
			id := a.t.TaskID
			delete(watches, id)
			if errors.Is(a.err, problem.ErrNotFound) {
				continue // it expired meanwhile: nothing more to tell of it
			}
			if a.err != nil {
				leave()
				q.failWait(a.err)
				return
			}
			if h.draining() {
				leave()
				q.reply(map[string]any{"resultType": resultComplete, "_meta": subMeta})
				return
			}
			if a.t.Revision > tasks[id].Revision {
				tasks[id] = a.t
				send(a.t)
			}
			if !wire.Terminal(tasks[id].Status) {
				watch(tasks[id])
			}
		case <-tick.C:
			if q.stream.comment() != nil {
				leave()
				return
			}
		case <-ctx.Done():
			leave()
			q.h.observe(q.label, "left")
			return
		}
	}
	q.reply(map[string]any{"resultType": resultComplete, "_meta": subMeta})
}
