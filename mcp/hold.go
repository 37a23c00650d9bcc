package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/taskhook/taskhook/authz"
)

// errLeft is a wait ended by the client leaving: nothing is written.
var errLeft = errors.New("the client left")

// await answers q with answer's reply for task t once done says it may:
// held off the handler when t is done already or when q cannot or need not
// stream, else on a stream on which each is given t and every newer state.
func (q *request) await(t Task, stream bool, done func(Task) bool, each func(Task), answer func(Task) (any, *rpcError)) {
	if done(t) || !q.canStream || !stream {
		q.hold(t, done, answer)
		return
	}
	q.beginStream()
	t, err := q.follow(t, func(t Task) bool {
		each(t)
		return done(t)
	})
	if err != nil {
		q.failWait(err)
		return
	}
	res, e := answer(t)
	if e != nil {
		q.fail(e)
		return
	}
	q.reply(res)
}

// follow follows task t for q's stream: each is given t, then every newer
// state, until it says done; idle stretches get a heartbeat comment. It
// returns the last state, errLeft when the client left, or the error the
// wait ended with (draining included).
func (q *request) follow(t Task, each func(Task) (done bool)) (Task, error) {
	for !each(t) {
		next, err := q.watchStream(t)
		for err == nil && next.Revision <= t.Revision {
			if q.stream.comment() != nil {
				return t, errLeft
			}
			next, err = q.watchStream(t)
		}
		if err != nil {
			return t, err
		}
		t = next
	}
	return t, nil
}

// watchStream waits on q's stream for a state of t newer than t's (or the
// same again, when the watch ends without one): errLeft when the client
// left, or the error the wait ended with (draining included).
func (q *request) watchStream(t Task) (Task, error) {
	ctx := q.r.Context()
	next, err := q.waitStream(ctx, q.h.cfg.Backend.Watch(ctx, q.p, t.TaskID, t.Revision))
	switch {
	case ctx.Err() != nil:
		return t, errLeft
	case err != nil:
		return t, err
	case q.h.draining():
		return t, errDraining()
	}
	return next, nil
}

// waitStream waits for w's answer holding the handler's goroutine only,
// sending a heartbeat comment on the stream every Heartbeat meanwhile.
func (q *request) waitStream(ctx context.Context, w Watch) (Task, error) {
	if !w.Waits() {
		return w.Wait(ctx)
	}
	type answer struct {
		t   Task
		err error
	}
	ch := make(chan answer, 1)
	w.Park(ctx, func(t Task, err error) { ch <- answer{t, err} })
	tick := time.NewTicker(q.h.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case a := <-ch:
			return a.t, a.err
		case <-tick.C:
			if err := q.stream.comment(); err != nil {
				w.Leave()
				a := <-ch
				return a.t, errLeft
			}
		case <-ctx.Done():
			w.Leave()
			a := <-ch
			return a.t, a.err
		}
	}
}

// held is a Held: an answer written as one JSON body once done says the
// task is where it answers.
type held struct {
	h      *handler
	p      authz.Principal
	id     json.RawMessage // of the request it answers
	label  string
	t      Task
	done   func(Task) bool
	answer func(Task) (any, *rpcError)
	err    *rpcError
}

var _ Held = (*held)(nil)

func (x *held) Begin(ctx context.Context) Watch {
	return x.h.cfg.Backend.Watch(ctx, x.p, x.t.TaskID, x.t.Revision)
}

func (x *held) Step(t Task, err error) bool {
	switch {
	case err != nil:
		x.err = x.h.backendError(err, errNoSuchTask())
		return false
	case t.Revision > x.t.Revision:
		x.t = t
	}
	if x.done(x.t) {
		return false
	}
	if x.h.draining() {
		x.err = errDraining()
		return false
	}
	return true
}

func (x *held) Write(w http.ResponseWriter) {
	q := &request{h: x.h, w: w, m: message{id: x.id}, label: x.label}
	if x.err != nil {
		q.fail(x.err)
		return
	}
	res, e := x.answer(x.t)
	if e != nil {
		q.fail(e)
		return
	}
	q.reply(res)
}

// hold answers q once done(t) holds: parked by Config.Park where it can
// be, else waiting in this handler.
func (q *request) hold(t Task, done func(Task) bool, answer func(Task) (any, *rpcError)) {
	x := &held{h: q.h, p: q.p, id: q.m.id, label: q.label, t: t, done: done, answer: answer}
	if !done(t) {
		if q.h.cfg.Park != nil && q.h.cfg.Park(q.w, q.r, x) {
			return
		}
		ctx := q.r.Context()
		for {
			next, err := x.Begin(ctx).Wait(ctx)
			if ctx.Err() != nil {
				return // the client left: nobody reads an answer
			}
			if !x.Step(next, err) {
				break
			}
		}
	}
	x.Write(q.w)
}
