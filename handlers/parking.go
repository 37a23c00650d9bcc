package handlers

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/tasks"
)

// A long-poll that waits in its handler holds net/http's goroutine for its
// connection, grown to 16 KiB of stack by then, and the connection's
// buffers: about 38 KB a poll. Parking takes a long-poll's connection off
// the server instead (HTTP/1.1 only), before the poll's first read. The
// read runs on a goroutine of its own, with a small stack, and a poll that
// must then wait holds no goroutine at all: its waiter is parked
// (tasks.Poll.Park), a hang-up of its client is watched for with all the
// others' (connWatch), and its answer is written to the connection on a
// goroutine that lives for that. The connection is then kept, the same way,
// until its client sends the next request, which goes to the server
// through the Parking's listener. Taken before the first read rather than
// after, a burst of polls queued for Redis connections does not hold the
// server's goroutines and buffers either.

// ParkingConfig is how parked connections are kept.
type ParkingConfig struct {
	// IdleTimeout is how long an answered connection is kept for its
	// client's next request (the server's IdleTimeout); default 2 minutes.
	IdleTimeout time.Duration
}

// Parking holds the parked long-polls of a server. It is also the
// net.Listener through which their connections go back to the server when
// their clients send their next requests: serve it beside the main
// listener. Start it before serving; stop it after the server has shut
// down.
type Parking struct {
	cfg     ParkingConfig
	metrics *metrics.Metrics
	watch   *connWatch // nil before Start, or where connections cannot be watched: nothing parks
	back    chan net.Conn
	closed  chan struct{}
	closing sync.Once
	polls   sync.WaitGroup // polls whose connection was taken, not answered yet

	mu   sync.Mutex
	idle map[*idleConn]struct{}
}

// NewParking returns a Parking; nothing parks until Start.
func NewParking(cfg ParkingConfig, m *metrics.Metrics) *Parking {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	return &Parking{cfg: cfg, metrics: m, back: make(chan net.Conn), closed: make(chan struct{}), idle: map[*idleConn]struct{}{}}
}

// Start begins watching connections. Where they cannot be watched (not on
// Linux) it does nothing, and long-polls wait in their handlers.
func (p *Parking) Start(context.Context) error {
	if p.watch != nil {
		return nil
	}
	cw, err := newConnWatch()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	p.watch = cw
	return err
}

// Stop closes the listener and the connections kept idle, waits, within
// ctx, for the polls still parked to be answered (the server drains first,
// which answers them), then stops watching.
func (p *Parking) Stop(ctx context.Context) error {
	_ = p.Close()
	answered := make(chan struct{})
	go func() { p.polls.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.watch != nil {
		p.watch.close()
	}
	return nil
}

// Accept returns the next connection whose client sent a request after its
// parked poll was answered.
func (p *Parking) Accept() (net.Conn, error) {
	select {
	case c := <-p.back:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and closes the connections kept idle; connections
// answered from then on are closed. The server's Shutdown calls it.
func (p *Parking) Close() error {
	p.closing.Do(func() {
		close(p.closed)
		p.mu.Lock()
		idle := make([]*idleConn, 0, len(p.idle))
		for ic := range p.idle {
			idle = append(idle, ic)
		}
		p.mu.Unlock()
		for _, ic := range idle {
			if p.unidle(ic) {
				ic.conn.Close()
			}
		}
	})
	return nil
}

// Addr is the listener's address: connections come back from the server's
// own listener, so there is none.
func (p *Parking) Addr() net.Addr { return parkingAddr{} }

type parkingAddr struct{}

func (parkingAddr) Network() string { return "parking" }
func (parkingAddr) String() string  { return "parking" }

func (p *Parking) isClosed() bool { return isClosed(p.closed) }

// pollAnswer writes the answer of a task long-poll.
type pollAnswer func(w http.ResponseWriter, r *http.Request, t tasks.Task, raw []byte, err error)

// servePoll answers a task long-poll that begin begins (its first read).
// A poll with a wait is parked when it can be: its connection is taken off
// the server before the first read, which then runs with no more than a
// goroutine of its own; else it waits in this handler.
func (a *api) servePoll(w http.ResponseWriter, r *http.Request, wait time.Duration,
	begin func(context.Context) *tasks.Poll, answer pollAnswer) {
	if wait > 0 && a.park(w, r, begin, answer) {
		return
	}
	t, raw, err := begin(r.Context()).Wait(r.Context())
	answer(w, r, t, raw, err)
}

// park takes the request's connection off the server, then begins the
// poll and parks it on a goroutine of its own. The answer is written,
// logged and counted as the handler would have. It reports false, having
// changed nothing, when the request cannot be parked: no Parking, HTTP/2 or
// 1.0, a request with a body, or a writer that cannot give up its
// connection (tests' recorders).
func (a *api) park(w http.ResponseWriter, r *http.Request, begin func(context.Context) *tasks.Poll, answer pollAnswer) bool {
	rec := recorderOf(w)
	if a.parking == nil || a.parking.watch == nil || a.parking.isClosed() || rec == nil || rec.status != 0 ||
		r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody) {
		return false
	}
	header := saveHeader(w.Header())
	conn, next, ok := a.parking.take(w)
	if !ok {
		return false
	}
	rec.parked = true
	start, r := rec.start, detach(r) // the goroutine keeps neither rec nor r: they hold the server's buffers
	go func() {
		poll := begin(r.Context())
		release := a.parking.hold(conn, poll)
		poll.Park(r.Context(), func(t tasks.Task, raw []byte, err error) {
			release()
			res := &lateResponse{header: header.header()}
			late := &statusRecorder{ResponseWriter: res, start: start}
			func() {
				defer a.settle(late, r)
				answer(late, r, t, raw, err)
			}()
			a.parking.answered(conn, next, res, !r.Close && !isClosed(a.tasks.Draining()))
		})
	}()
	return true
}

// take takes the request's connection off the server: the connection, and
// the bytes of the client's next request the server had read already.
func (p *Parking) take(w http.ResponseWriter) (net.Conn, []byte, bool) {
	// Counted before the server lets go of the connection: its Shutdown,
	// which waits for the connection, then cannot end before Stop waits
	// for the poll.
	p.polls.Add(1)
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.polls.Done()
		return nil, nil, false
	}
	next, _ := rw.Reader.Peek(rw.Reader.Buffered())
	next = bytes.Clone(next)
	if h, ok := conn.(*pipelinedConn); ok {
		conn, next = h.Conn, append(next, h.next...)
	}
	return conn, next, true
}

// hold counts a poll that waits as parked, and has it leave when its
// client hangs up, until the returned func is called.
func (p *Parking) hold(c net.Conn, poll *tasks.Poll) (release func()) {
	if !poll.Waits() {
		return func() {}
	}
	p.metrics.ParkedPolls.Inc()
	stopWatch, err := p.watch.watch(c, false, poll.Leave)
	return func() {
		if err == nil { // else c is not a socket: the poll runs to its answer
			stopWatch()
		}
		p.metrics.ParkedPolls.Dec()
	}
}

// answered sends a parked poll's answer, then keeps the connection for its
// client's next request when keep, or else closes it.
func (p *Parking) answered(c net.Conn, next []byte, res *lateResponse, keep bool) {
	defer p.polls.Done()
	keep = keep && !p.isClosed()
	if err := res.send(c, keep); err != nil || !keep {
		c.Close()
		return
	}
	if len(next) > 0 {
		p.handBack(&pipelinedConn{Conn: c, next: next})
		return
	}
	p.keepIdle(c)
}

// idleConn is a connection kept for its client's next request.
type idleConn struct {
	conn      net.Conn
	timer     *time.Timer
	stopWatch func() bool
}

// keepIdle keeps c, with no goroutine, until its client sends its next
// request (c goes back to the server), hangs up or stays silent for
// IdleTimeout (c is closed).
func (p *Parking) keepIdle(c net.Conn) {
	p.mu.Lock()
	if p.isClosed() {
		p.mu.Unlock()
		c.Close()
		return
	}
	// Kept before anything can end the keeping (unidle): the watch's call
	// and the timer wait for the lock.
	ic := &idleConn{conn: c}
	stop, err := p.watch.watch(c, true, func() {
		if p.unidle(ic) {
			go p.handBack(c) // not on the watch's goroutine: Accept may take a moment
		}
	})
	if err == nil {
		ic.stopWatch = stop
		ic.timer = time.AfterFunc(p.cfg.IdleTimeout, func() {
			if p.unidle(ic) {
				c.Close()
			}
		})
		p.idle[ic] = struct{}{}
		p.metrics.ParkedIdle.Inc()
	}
	p.mu.Unlock()
	if err != nil {
		p.handBack(c) // it cannot be watched: the server waits for the request
	}
}

// unidle ends the keeping of ic: it reports whether it was kept, for the
// caller to hand it on.
func (p *Parking) unidle(ic *idleConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.idle[ic]; !ok {
		return false
	}
	delete(p.idle, ic)
	p.metrics.ParkedIdle.Dec()
	ic.timer.Stop()
	ic.stopWatch()
	return true
}

// handBack gives c back to the server, through Accept.
func (p *Parking) handBack(c net.Conn) {
	select {
	case p.back <- c:
	case <-p.closed:
		c.Close()
	}
}

// pipelinedConn is a connection whose client sent its next request before
// the answer to its parked poll: the server had read the first bytes of it,
// which are read again first.
type pipelinedConn struct {
	net.Conn
	next []byte
}

func (c *pipelinedConn) Read(b []byte) (int, error) {
	if len(c.next) == 0 {
		return c.Conn.Read(b)
	}
	n := copy(b, c.next)
	c.next = c.next[n:]
	return n, nil
}

// NetConn is the connection under c.
func (c *pipelinedConn) NetConn() net.Conn { return c.Conn }

// CloseWrite passes the half-close through, as stampingConn's does.
func (c *pipelinedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// lateResponse is the http.ResponseWriter of a parked poll's answer: it
// keeps what the answer writes, then sends it on the connection as net/http
// would have sent it, with the length of the body.
type lateResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (l *lateResponse) Header() http.Header { return l.header }

func (l *lateResponse) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
}

func (l *lateResponse) Write(b []byte) (int, error) {
	l.WriteHeader(http.StatusOK)
	return l.body.Write(b)
}

// send writes the response to c; without keep it says the connection
// closes. The bytes are those net/http writes: the handler's headers in
// order, then Date, Content-Length and Connection.
func (l *lateResponse) send(c net.Conn, keep bool) error {
	l.WriteHeader(http.StatusOK)
	text := http.StatusText(l.status)
	if text == "" {
		text = "status code " + strconv.Itoa(l.status)
	}
	var b bytes.Buffer
	b.Grow(256 + l.body.Len())
	b.WriteString("HTTP/1.1 " + strconv.Itoa(l.status) + " " + text + "\r\n")
	_ = l.header.Write(&b)
	b.WriteString("Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(l.body.Len()) + "\r\n")
	if !keep {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(l.body.Bytes())
	_, err := c.Write(b.Bytes())
	return err
}

// recorderOf is the request's statusRecorder (observe's), under any
// wrappers that say what they wrap.
func recorderOf(w http.ResponseWriter) *statusRecorder {
	for {
		switch v := w.(type) {
		case *statusRecorder:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// detach is r as the answer to it needs it once its handler has returned:
// its method and whether it asked to close the connection, and its id and
// route for the log. net/http ends a request's context and chi reuses its
// route context then, and the rest (headers, path values) is not kept while
// the request is parked.
func detach(r *http.Request) *http.Request {
	ctx := context.WithValue(context.Background(), requestIDKey, requestID(r.Context()))
	ctx = context.WithValue(ctx, routeKey, routeOf(r))
	late := &http.Request{Method: r.Method, URL: r.URL, Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor, Close: r.Close}
	return late.WithContext(ctx)
}

// savedHeader is a response header kept while its request is parked, in a
// smaller form than a map: names and values in turn.
type savedHeader []string

func saveHeader(h http.Header) savedHeader {
	var s savedHeader
	for name, values := range h {
		for _, v := range values {
			s = append(s, name, v)
		}
	}
	return s
}

func (s savedHeader) header() http.Header {
	h := make(http.Header, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		h[s[i]] = append(h[s[i]], s[i+1])
	}
	return h
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
