// Package parking holds HTTP/1.1 requests and connections off net/http's
// goroutine per connection: a request taken off the server (Take) to be
// answered later with no goroutine of its own while it waits, its answer
// written to the connection as net/http would have written it; and
// connections whose client has not sent its next request, or its first.
// Any face that holds a request while it waits (a long-poll, a wait of an
// MCP or A2A call) can use it.
//
// It imports metrics of this module and the standard library; never store,
// a service or handlers.
package parking

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/taskhook/taskhook/metrics"
)

// net/http gives every connection a goroutine, grown to 16 KiB of stack by
// the time a handler waits, and 8 KiB of buffers, from its accept to its
// close. A long-poll waiting in its handler held all that and a reader
// goroutine: about 38 KB a poll.
//
// A Lot holds connections with none of it while they wait: a request
// (HTTP/1.1) whose connection is taken off the server (Take) before its
// first read, which then runs on one of a few goroutines (FirstReads), and
// which waits parked (as tasks.Poll.Park and waits.LogPoll.Park wait); a
// connection whose client has not sent its next request yet, after such a
// request's answer; and a new connection whose client has not sent its
// first request yet. One epoll set (connWatch) tells when a client sends or
// hangs up, and the connection then goes to the server through the Lot's
// Accept: the Lot is the listener the server serves. Where connections
// cannot be watched (not on Linux) it holds none, and the server serves its
// listener as before.

// Config is how connections are held.
type Config struct {
	// IdleTimeout is how long an answered connection is held for its
	// client's next request (the server's IdleTimeout); default 2 minutes.
	IdleTimeout time.Duration
	// HeaderTimeout is how long a new connection is held for its client's
	// first request (the server's ReadHeaderTimeout); default 10 seconds.
	HeaderTimeout time.Duration
	// FirstReads is how many held requests make their first read at once;
	// default 64.
	FirstReads int
}

// Lot holds a server's parked requests and its connections that wait for a
// request. Start it, then serve Listener(ln) in place of ln; stop it after
// the server has shut down.
type Lot struct {
	cfg     Config
	metrics *metrics.Metrics
	watch   *connWatch // nil before Start, or where connections cannot be watched: nothing is held
	ln      net.Listener
	back    chan net.Conn // connections whose clients sent a request
	errs    chan error    // errors of ln's Accept, for the server's
	closed  chan struct{}
	closing sync.Once
	accepts sync.WaitGroup // the goroutine taking ln's connections
	polls   sync.WaitGroup // requests whose connection was taken, not answered yet

	mu      sync.Mutex
	held    map[*heldConn]struct{} // connections waiting for a request
	reading int                    // goroutines making first reads
	reads   []func()               // first reads waiting for one
}

// New returns a Lot; nothing is held until Start.
func New(cfg Config, m *metrics.Metrics) *Lot {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if cfg.HeaderTimeout == 0 {
		cfg.HeaderTimeout = 10 * time.Second
	}
	if cfg.FirstReads == 0 {
		cfg.FirstReads = 64
	}
	return &Lot{cfg: cfg, metrics: m, back: make(chan net.Conn), errs: make(chan error), closed: make(chan struct{}),
		held: map[*heldConn]struct{}{}}
}

// Start begins watching connections. Where they cannot be watched (not on
// Linux) it does nothing: Take holds no request, and the requests wait in
// their handlers.
func (l *Lot) Start(context.Context) error {
	if l.watch != nil {
		return nil
	}
	cw, err := newConnWatch()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	l.watch = cw
	return err
}

// Listener is the listener for the server to serve in place of ln: ln's
// connections, each once its client has sent something, and those of
// answered held requests. Where nothing is held, it is ln.
func (l *Lot) Listener(ln net.Listener) net.Listener {
	if l.watch == nil {
		return ln
	}
	l.ln = ln
	l.accepts.Add(1)
	go l.accept()
	return l
}

// accept holds each of ln's connections until its client sends its first
// request. An error of ln's Accept goes to the server's Accept, which backs
// off from a temporary one and returns on another.
func (l *Lot) accept() {
	defer l.accepts.Done()
	for {
		c, err := l.ln.Accept()
		if err == nil {
			l.holdForRequest(c, l.cfg.HeaderTimeout)
			continue
		}
		select {
		case l.errs <- err:
		case <-l.closed:
			return
		}
	}
}

// Stop closes the listener and the connections held for a request, waits,
// within ctx, for the requests still held to be answered (the server drains
// first, which answers them), then stops watching.
func (l *Lot) Stop(ctx context.Context) error {
	_ = l.Close()
	answered := make(chan struct{})
	go func() { l.polls.Wait(); l.accepts.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-ctx.Done():
		return ctx.Err()
	}
	if l.watch != nil {
		l.watch.close()
	}
	return nil
}

// Accept returns the next connection whose client has sent a request.
func (l *Lot) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept, closes ln and the connections held for a request;
// connections answered from then on are closed. The server's Shutdown
// calls it.
func (l *Lot) Close() error {
	var err error
	l.closing.Do(func() {
		close(l.closed)
		if l.ln != nil {
			err = l.ln.Close()
		}
		l.mu.Lock()
		held := make([]*heldConn, 0, len(l.held))
		for hc := range l.held {
			held = append(held, hc)
		}
		l.mu.Unlock()
		for _, hc := range held {
			if l.release(hc) {
				hc.conn.Close()
			}
		}
	})
	return err
}

// Addr is ln's address.
func (l *Lot) Addr() net.Addr { return l.ln.Addr() }

func (l *Lot) isClosed() bool { return IsClosed(l.closed) }

// firstRead runs read, the first read of a held request, on one of at most
// FirstReads goroutines: the others wait in a queue, where a burst of
// requests waiting for their store costs a closure each, not a goroutine
// each.
func (l *Lot) firstRead(read func()) {
	l.mu.Lock()
	if l.reading == l.cfg.FirstReads {
		l.reads = append(l.reads, read)
		l.mu.Unlock()
		return
	}
	l.reading++
	l.mu.Unlock()
	go func() {
		for read != nil {
			read()
			l.mu.Lock()
			read = nil
			if len(l.reads) > 0 {
				read, l.reads[0] = l.reads[0], nil
				l.reads = l.reads[1:]
			} else {
				l.reading--
			}
			l.mu.Unlock()
		}
	}()
}

// take takes the request's connection off the server: the connection, and
// the bytes of the client's next request the server had read already.
func (l *Lot) take(w http.ResponseWriter) (net.Conn, []byte, bool) {
	// Counted before the server lets go of the connection: its Shutdown,
	// which waits for the connection, then cannot end before Stop waits
	// for the request.
	l.polls.Add(1)
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		l.polls.Done()
		return nil, nil, false
	}
	next, _ := rw.Reader.Peek(rw.Reader.Buffered())
	next = bytes.Clone(next)
	if h, ok := conn.(*pipelinedConn); ok {
		conn, next = h.Conn, append(next, h.next...)
	}
	return conn, next, true
}

// watchPoll counts a poll that waits as parked, and has it leave when its
// client hangs up, until the returned func is called.
func (l *Lot) watchPoll(c net.Conn, poll Poll) (release func()) {
	if !poll.Waits() {
		return func() {}
	}
	l.metrics.ParkedPolls.Inc()
	stopWatch, err := l.watch.watch(c, false, poll.Leave)
	return func() {
		if err == nil { // else c is not a socket: the poll runs to its answer
			stopWatch()
		}
		l.metrics.ParkedPolls.Dec()
	}
}

// answered sends a held request's answer, then holds the connection for
// its client's next request when keep, or else closes it.
func (l *Lot) answered(c net.Conn, next []byte, res *lateResponse, keep bool) {
	defer l.polls.Done()
	keep = keep && !l.isClosed()
	if err := res.send(c, keep); err != nil || !keep {
		c.Close()
		return
	}
	if len(next) > 0 {
		l.handBack(&pipelinedConn{Conn: c, next: next})
		return
	}
	l.holdForRequest(c, l.cfg.IdleTimeout)
}

// heldConn is a connection held for its client's next request.
type heldConn struct {
	conn      net.Conn
	timer     *time.Timer
	stopWatch func() bool
}

// holdForRequest holds c, with no goroutine, until its client sends a
// request (c goes to the server), hangs up (the server reads the end) or
// stays silent for timeout (c is closed).
func (l *Lot) holdForRequest(c net.Conn, timeout time.Duration) {
	l.mu.Lock()
	if l.isClosed() {
		l.mu.Unlock()
		c.Close()
		return
	}
	// Held before anything can end the holding (release): the watch's call
	// and the timer wait for the lock.
	hc := &heldConn{conn: c}
	stop, err := l.watch.watch(c, true, func() {
		if l.release(hc) {
			go l.handBack(c) // not on the watch's goroutine: Accept may take a moment
		}
	})
	if err == nil {
		hc.stopWatch = stop
		hc.timer = time.AfterFunc(timeout, func() {
			if l.release(hc) {
				c.Close()
			}
		})
		l.held[hc] = struct{}{}
		l.metrics.ParkedIdle.Inc()
	}
	l.mu.Unlock()
	if err != nil {
		go l.handBack(c) // it cannot be watched: the server waits for the request
	}
}

// release ends the holding of hc: it reports whether it was held, for the
// caller to hand it on.
func (l *Lot) release(hc *heldConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[hc]; !ok {
		return false
	}
	delete(l.held, hc)
	l.metrics.ParkedIdle.Dec()
	hc.timer.Stop()
	hc.stopWatch()
	return true
}

// handBack gives c to the server, through Accept.
func (l *Lot) handBack(c net.Conn) {
	select {
	case l.back <- c:
	case <-l.closed:
		c.Close()
	}
}

// pipelinedConn is a connection whose client sent its next request before
// the answer to its held request: the server had read the first bytes of
// it, which are read again first.
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

// CloseWrite passes the half-close through to the connection under c.
func (c *pipelinedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
