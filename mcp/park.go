package mcp

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/taskhook/taskhook/parking"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/requestlog"
)

// LotParker is the Parker that holds answers on lot: the request's
// connection leaves the server, each wait is parked with no goroutine, and
// the answer is written, logged and counted by log as the handler would
// have. It holds only requests that came through log's Middleware, whose
// body has been read; draining closed, the connection is not kept after the
// answer.
func LotParker(lot *parking.Lot, log *requestlog.Observer, draining <-chan struct{}) Parker {
	return func(w http.ResponseWriter, r *http.Request, h Held) bool {
		rec := requestlog.RecorderOf(w)
		if lot == nil || rec == nil || rec.Status() != 0 {
			return false
		}
		held, ok := lot.TakeRead(w, r)
		if !ok {
			return false
		}
		rec.Park()
		p := &parked{held: held, h: h, log: log, draining: draining, start: rec.Start(),
			ctx:    requestlog.WithRoute(requestid.With(context.Background(), requestid.From(r.Context())), requestlog.Route(r)),
			method: r.Method, close: r.Close}
		held.FirstRead(p.begin)
		return true
	}
}

// parked is one held answer: neither the server's writer nor its request is
// kept, only what the answer and its log line need.
type parked struct {
	held     *parking.Held
	h        Held
	log      *requestlog.Observer
	draining <-chan struct{}
	start    time.Time       // the request's start, for the log
	ctx      context.Context // its id and route
	method   string
	close    bool
	left     atomic.Bool // the client hung up: no further wait
}

// begin begins the next wait and parks it.
func (p *parked) begin() {
	w := p.h.Begin(p.ctx)
	release := p.held.Watch(leaving{w, &p.left})
	w.Park(p.ctx, func(t Task, err error) {
		release()
		if p.h.Step(t, err) && !p.left.Load() {
			p.held.FirstRead(p.begin)
			return
		}
		p.answer()
	})
}

// answer writes the held answer on the connection.
func (p *parked) answer() {
	p.held.Answer(func(res http.ResponseWriter) bool {
		r := (&http.Request{Method: p.method, URL: &url.URL{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Close: p.close}).WithContext(p.ctx)
		late := requestlog.NewRecorder(res, p.start)
		func() {
			defer p.log.Settle(late, r)
			p.h.Write(late)
		}()
		return !parking.IsClosed(p.draining)
	})
}

// leaving is a parked wait whose client may hang up: the wait answers at
// once, and no further wait begins.
type leaving struct {
	Watch
	left *atomic.Bool
}

func (l leaving) Leave() {
	l.left.Store(true)
	l.Watch.Leave()
}
