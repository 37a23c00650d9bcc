package handlers

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/parking"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/requestlog"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// A long-poll that must wait (a task's, or a JSON read of an event log) is
// parked where it can be (see package parking): its connection is taken off
// the server before the poll's first read, and its answer is written to the
// connection later, as net/http would have written it, then logged and
// counted as any request's.

// A longPoll is a long-poll begun (a task's, or a log's): whether it waits,
// how it is told its caller left, and its answer, waited for in the handler
// (wait) or parked (park), as what writes it.
type longPoll interface {
	Waits() bool
	Leave()
	wait(ctx context.Context) respond
	park(ctx context.Context, answered func(respond))
}

// respond writes a long-poll's answer.
type respond func(w http.ResponseWriter, r *http.Request)

// pollAnswer writes the answer of a task long-poll.
type pollAnswer func(w http.ResponseWriter, r *http.Request, t tasks.Task, raw []byte, err error)

// taskPoll is a task long-poll, with what writes its answer.
type taskPoll struct {
	*tasks.Poll
	answer pollAnswer
}

func (p taskPoll) wait(ctx context.Context) respond { return p.respond(p.Wait(ctx)) }

func (p taskPoll) park(ctx context.Context, answered func(respond)) {
	p.Park(ctx, func(t tasks.Task, raw []byte, err error) { answered(p.respond(t, raw, err)) })
}

func (p taskPoll) respond(t tasks.Task, raw []byte, err error) respond {
	return func(w http.ResponseWriter, r *http.Request) { p.answer(w, r, t, raw, err) }
}

// logPoll is a read of an event log that may wait, with what writes its
// answer.
type logPoll struct {
	*waits.LogPoll
	answer func(w http.ResponseWriter, r *http.Request, page waits.LogPage, err error)
}

func (p logPoll) wait(ctx context.Context) respond { return p.respond(p.Wait(ctx)) }

func (p logPoll) park(ctx context.Context, answered func(respond)) {
	p.Park(ctx, func(page waits.LogPage, err error) { answered(p.respond(page, err)) })
}

func (p logPoll) respond(page waits.LogPage, err error) respond {
	return func(w http.ResponseWriter, r *http.Request) { p.answer(w, r, page, err) }
}

// servePoll answers a task long-poll that begin begins (its first read).
func (a *api) servePoll(w http.ResponseWriter, r *http.Request, wait time.Duration,
	begin func(context.Context) *tasks.Poll, answer pollAnswer) {
	a.serveLongPoll(w, r, wait, func(ctx context.Context) longPoll { return taskPoll{begin(ctx), answer} })
}

// serveLongPoll answers a long-poll that begin begins (its first read).
// A poll with a wait is parked when it can be: its connection is taken off
// the server before the first read; else it waits in this handler.
func (a *api) serveLongPoll(w http.ResponseWriter, r *http.Request, wait time.Duration, begin func(context.Context) longPoll) {
	if wait > 0 && a.park(w, r, begin) {
		return
	}
	begin(r.Context()).wait(r.Context())(w, r)
}

// park takes the request's connection off the server (parking.Lot.Take),
// then has the Lot begin the poll and parks it. The answer is written,
// logged and counted as the handler would have. It reports false, having
// changed nothing, when the request cannot be parked: no Lot, HTTP/2 or
// 1.0, a request with a body, or a writer that cannot give up its
// connection (tests' recorders).
func (a *api) park(w http.ResponseWriter, r *http.Request, begin func(context.Context) longPoll) bool {
	rec := requestlog.RecorderOf(w)
	if rec == nil || rec.Status() != 0 {
		return false
	}
	held, ok := a.parking.Take(w, r)
	if !ok {
		return false
	}
	rec.Park()
	start, req := rec.Start(), detach(r) // neither rec nor r is kept: they hold the server's buffers
	held.FirstRead(func() {
		poll := begin(req.ctx)
		release := held.Watch(poll)
		poll.park(req.ctx, func(answer respond) {
			release()
			held.Answer(func(res http.ResponseWriter) bool {
				r := req.request()
				late := requestlog.NewRecorder(res, start)
				func() {
					defer a.requestLog.Settle(late, r)
					answer(late, r)
				}()
				return !parking.IsClosed(a.tasks.Draining())
			})
		})
	})
	return true
}

// parkedRequest is what the answer to a parked request needs of it once its
// handler has returned: net/http ends a request's context and chi reuses
// its route context then, and the rest of it (headers, URL) is not kept
// while it waits.
type parkedRequest struct {
	ctx    context.Context // its id and route, for the log
	method string
	close  bool // it asked to close the connection
}

func detach(r *http.Request) parkedRequest {
	ctx := requestid.With(context.Background(), requestid.From(r.Context()))
	ctx = requestlog.WithRoute(ctx, requestlog.Route(r))
	return parkedRequest{ctx: ctx, method: r.Method, close: r.Close}
}

// request is the request as the answer's writing and logging see it: its
// method, id and route (no headers, an empty URL).
func (p parkedRequest) request() *http.Request {
	r := &http.Request{Method: p.method, URL: &url.URL{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Close: p.close}
	return r.WithContext(p.ctx)
}
