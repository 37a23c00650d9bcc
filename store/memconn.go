package store

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// memConnPair is the two ends of an in-memory connection: what one end
// writes, the other reads. Unlike net.Pipe, each direction is a buffer that
// grows as needed, so a write never waits for the other end to read.
//
// That is what keeps the embedded store from deadlocking. A client sending a
// pipeline writes all its commands before it reads a reply, while the server
// writes each reply as soon as it has run the command; over a synchronous
// pipe the server's first reply waits for the client to read, the client's
// next command waits for the server to read, and neither ever does, once the
// commands outgrow the little the server reads ahead. Here both writes
// return at once, whatever the pipeline's length or the replies' size. What
// is buffered is what the client asked for and has not read yet, as a
// socket's buffers would hold it.
func memConnPair() (a, b net.Conn) {
	ab, ba := newMemBuffer(), newMemBuffer()
	return &memConn{in: ba, out: ab, done: make(chan struct{})},
		&memConn{in: ab, out: ba, done: make(chan struct{})}
}

// memConn is one end of a memConnPair, a net.Conn: reads wait for data, the
// other end's close (io.EOF once the data is read), this end's close or the
// read deadline; writes never wait.
type memConn struct {
	in, out       *memBuffer
	done          chan struct{} // closed by Close
	closeOnce     sync.Once
	readDeadline  connDeadline
	writeDeadline connDeadline
}

func (c *memConn) Read(p []byte) (int, error) {
	for {
		if c.closed() {
			return 0, c.opError("read", net.ErrClosed)
		}
		if expired(c.readDeadline.get()) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		if len(p) == 0 {
			return 0, nil
		}
		n, eof := c.in.read(p)
		if n > 0 {
			return n, nil
		}
		if eof {
			return 0, io.EOF
		}
		// Nothing to read: wait for data, a close, the deadline or a new
		// deadline, then look again.
		at, moved := c.readDeadline.watch()
		var timer *time.Timer
		var timeout <-chan time.Time
		if !at.IsZero() {
			timer = time.NewTimer(time.Until(at))
			timeout = timer.C
		}
		select {
		case <-c.in.readable:
		case <-c.done:
		case <-moved:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	if c.closed() {
		return 0, c.opError("write", net.ErrClosed)
	}
	if expired(c.writeDeadline.get()) {
		return 0, c.opError("write", os.ErrDeadlineExceeded)
	}
	if err := c.out.write(p); err != nil {
		return 0, c.opError("write", err)
	}
	return len(p), nil
}

// Close ends both directions: the other end reads what was written before
// and then io.EOF, and its writes fail; this end's reads and writes fail at
// once, a read that waits included.
func (c *memConn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		close(c.done)
		c.out.closeWrite()
		c.in.closeRead()
	})
	if !first {
		return c.opError("close", net.ErrClosed)
	}
	return nil
}

func (c *memConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

func (c *memConn) SetDeadline(t time.Time) error {
	if c.closed() {
		return c.opError("set deadline", net.ErrClosed)
	}
	c.readDeadline.set(t)
	c.writeDeadline.set(t)
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	if c.closed() {
		return c.opError("set deadline", net.ErrClosed)
	}
	c.readDeadline.set(t)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	if c.closed() {
		return c.opError("set deadline", net.ErrClosed)
	}
	c.writeDeadline.set(t)
	return nil
}

func (c *memConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: memAddr{}.Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// memAddr is the address of both ends of a memConnPair.
type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "embedded" }

// memBuffer is one direction of a memConnPair: the bytes written and not
// read yet.
type memBuffer struct {
	mu       sync.Mutex
	data     bytes.Buffer
	eof      bool          // the writing end closed: reads end once data is read
	gone     bool          // the reading end closed: writes fail, nothing is kept
	readable chan struct{} // capacity 1: data or eof may have come
}

// keptBufferBytes is the most an emptied buffer keeps for the next writes;
// one that grew larger for a long reply is let go.
const keptBufferBytes = 64 << 10

func newMemBuffer() *memBuffer { return &memBuffer{readable: make(chan struct{}, 1)} }

func (m *memBuffer) write(p []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone {
		return io.ErrClosedPipe
	}
	m.data.Write(p)
	m.signal()
	return nil
}

// read moves buffered bytes into p. With none, eof says whether the writing
// end has closed, so that none will come.
func (m *memBuffer) read(p []byte) (n int, eof bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, _ = m.data.Read(p)
	switch {
	case m.data.Len() > 0:
		m.signal() // for another reader waiting on this end
	case m.data.Cap() > keptBufferBytes:
		m.data = bytes.Buffer{}
	}
	return n, n == 0 && m.eof
}

func (m *memBuffer) closeWrite() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eof = true
	m.signal()
}

func (m *memBuffer) closeRead() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gone = true
	m.data = bytes.Buffer{}
}

func (m *memBuffer) signal() {
	select {
	case m.readable <- struct{}{}:
	default:
	}
}

// connDeadline is one deadline of a memConn. A read waiting under it also
// waits on moved, which a new deadline closes, so it then goes by the new one.
type connDeadline struct {
	mu    sync.Mutex
	at    time.Time // zero: none
	moved chan struct{}
}

func (d *connDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.moved != nil {
		close(d.moved)
		d.moved = nil
	}
}

func (d *connDeadline) get() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at
}

// watch is the deadline and a channel closed when it changes.
func (d *connDeadline) watch() (time.Time, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.moved == nil {
		d.moved = make(chan struct{})
	}
	return d.at, d.moved
}

// expired reports whether the deadline at has passed (never when zero).
func expired(at time.Time) bool { return !at.IsZero() && !time.Now().Before(at) }
