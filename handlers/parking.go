package handlers

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
// Parking holds connections with none of it while they wait: a long-poll
// (HTTP/1.1) whose connection is taken off the server before its first
// read, which then runs on one of a few goroutines (FirstReads), and which
// waits parked (tasks.Poll.Park, waits.LogPoll.Park); a connection whose client has not sent its next
// request yet, after such a poll's answer; and a new connection whose
// client has not sent its first request yet. One epoll set (connWatch)
// tells when a client sends or hangs up, and the connection then goes to
// the server through Parking's Accept: Parking is the listener the server
// serves. Where connections cannot be watched (not on Linux) it holds
// none, and the server serves its listener as before.

// ParkingConfig is how connections are held.
type ParkingConfig struct {
	// IdleTimeout is how long an answered connection is held for its
	// client's next request (the server's IdleTimeout); default 2 minutes.
	IdleTimeout time.Duration
	// HeaderTimeout is how long a new connection is held for its client's
	// first request (the server's ReadHeaderTimeout); default 10 seconds.
	HeaderTimeout time.Duration
	// FirstReads is how many parked polls make their first read at once;
	// default 64.
	FirstReads int
}

// Parking holds a server's parked long-polls and its connections that
// wait for a request. Start it, then serve Listener(ln) in place of ln;
// stop it after the server has shut down.
type Parking struct {
	cfg     ParkingConfig
	metrics *metrics.Metrics
	watch   *connWatch // nil before Start, or where connections cannot be watched: nothing is held
	ln      net.Listener
	back    chan net.Conn // connections whose clients sent a request
	errs    chan error    // errors of ln's Accept, for the server's
	closed  chan struct{}
	closing sync.Once
	accepts sync.WaitGroup // the goroutine taking ln's connections
	polls   sync.WaitGroup // polls whose connection was taken, not answered yet

	mu      sync.Mutex
	held    map[*heldConn]struct{} // connections waiting for a request
	reading int                    // goroutines making first reads
	reads   []func()               // first reads waiting for one
}

// NewParking returns a Parking; nothing is held until Start.
func NewParking(cfg ParkingConfig, m *metrics.Metrics) *Parking {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if cfg.HeaderTimeout == 0 {
		cfg.HeaderTimeout = 10 * time.Second
	}
	if cfg.FirstReads == 0 {
		cfg.FirstReads = 64
	}
	return &Parking{cfg: cfg, metrics: m, back: make(chan net.Conn), errs: make(chan error), closed: make(chan struct{}),
		held: map[*heldConn]struct{}{}}
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

// Listener is the listener for the server to serve in place of ln: ln's
// connections, each once its client has sent something, and those of
// answered parked polls. Where nothing is held, it is ln.
func (p *Parking) Listener(ln net.Listener) net.Listener {
	if p.watch == nil {
		return ln
	}
	p.ln = ln
	p.accepts.Add(1)
	go p.accept()
	return p
}

// accept holds each of ln's connections until its client sends its first
// request. An error of ln's Accept goes to the server's Accept, which backs
// off from a temporary one and returns on another.
func (p *Parking) accept() {
	defer p.accepts.Done()
	for {
		c, err := p.ln.Accept()
		if err == nil {
			p.holdForRequest(c, p.cfg.HeaderTimeout)
			continue
		}
		select {
		case p.errs <- err:
		case <-p.closed:
			return
		}
	}
}

// Stop closes the listener and the connections held for a request, waits,
// within ctx, for the polls still parked to be answered (the server drains
// first, which answers them), then stops watching.
func (p *Parking) Stop(ctx context.Context) error {
	_ = p.Close()
	answered := make(chan struct{})
	go func() { p.polls.Wait(); p.accepts.Wait(); close(answered) }()
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

// Accept returns the next connection whose client has sent a request.
func (p *Parking) Accept() (net.Conn, error) {
	select {
	case c := <-p.back:
		return c, nil
	case err := <-p.errs:
		return nil, err
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept, closes ln and the connections held for a request;
// connections answered from then on are closed. The server's Shutdown
// calls it.
func (p *Parking) Close() error {
	var err error
	p.closing.Do(func() {
		close(p.closed)
		if p.ln != nil {
			err = p.ln.Close()
		}
		p.mu.Lock()
		held := make([]*heldConn, 0, len(p.held))
		for hc := range p.held {
			held = append(held, hc)
		}
		p.mu.Unlock()
		for _, hc := range held {
			if p.release(hc) {
				hc.conn.Close()
			}
		}
	})
	return err
}

// Addr is ln's address.
func (p *Parking) Addr() net.Addr { return p.ln.Addr() }

func (p *Parking) isClosed() bool { return isClosed(p.closed) }

// firstRead runs read, the first read of a parked poll, on one of at most
// FirstReads goroutines: the others wait in a queue, where a burst of polls
// waiting for Redis connections costs a closure each, not a goroutine each.
func (p *Parking) firstRead(read func()) {
	p.mu.Lock()
	if p.reading == p.cfg.FirstReads {
		p.reads = append(p.reads, read)
		p.mu.Unlock()
		return
	}
	p.reading++
	p.mu.Unlock()
	go func() {
		for read != nil {
			read()
			p.mu.Lock()
			read = nil
			if len(p.reads) > 0 {
				read, p.reads[0] = p.reads[0], nil
				p.reads = p.reads[1:]
			} else {
				p.reading--
			}
			p.mu.Unlock()
		}
	}()
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

// watchPoll counts a poll that waits as parked, and has it leave when its
// client hangs up, until the returned func is called.
func (p *Parking) watchPoll(c net.Conn, poll longPoll) (release func()) {
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

// answered sends a parked poll's answer, then holds the connection for its
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
	p.holdForRequest(c, p.cfg.IdleTimeout)
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
func (p *Parking) holdForRequest(c net.Conn, timeout time.Duration) {
	p.mu.Lock()
	if p.isClosed() {
		p.mu.Unlock()
		c.Close()
		return
	}
	// Held before anything can end the holding (release): the watch's call
	// and the timer wait for the lock.
	hc := &heldConn{conn: c}
	stop, err := p.watch.watch(c, true, func() {
		if p.release(hc) {
			go p.handBack(c) // not on the watch's goroutine: Accept may take a moment
		}
	})
	if err == nil {
		hc.stopWatch = stop
		hc.timer = time.AfterFunc(timeout, func() {
			if p.release(hc) {
				c.Close()
			}
		})
		p.held[hc] = struct{}{}
		p.metrics.ParkedIdle.Inc()
	}
	p.mu.Unlock()
	if err != nil {
		go p.handBack(c) // it cannot be watched: the server waits for the request
	}
}

// release ends the holding of hc: it reports whether it was held, for the
// caller to hand it on.
func (p *Parking) release(hc *heldConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.held[hc]; !ok {
		return false
	}
	delete(p.held, hc)
	p.metrics.ParkedIdle.Dec()
	hc.timer.Stop()
	hc.stopWatch()
	return true
}

// handBack gives c to the server, through Accept.
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
