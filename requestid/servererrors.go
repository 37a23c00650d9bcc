package requestid

import (
	"bytes"
	"log/slog"
	"net"
)

// net/http answers some requests itself, before any handler runs: a
// malformed request line or header (400), headers above the server's limit
// (431), an unknown transfer coding (501). It writes those answers straight
// to the connection, in one write, as
//
//	HTTP/1.1 <status><serverErrorHeaders><text>
//
// with no way to add a header. The contract wants X-Request-Id on every
// response, so the listener's connections recognise exactly that write and
// add one (a fresh id: the request could not be read, so there is none to
// echo), and log it, so the id the client sees leads somewhere.
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// maxServerError bounds the writes looked at: net/http's own answers are a
// few dozen bytes.
const maxServerError = 512

// StampServerErrors wraps a listener so that the answers net/http writes
// by itself carry an X-Request-Id, like every other answer.
func StampServerErrors(ln net.Listener, log *slog.Logger) net.Listener {
	return &stampingListener{Listener: ln, log: log}
}

type stampingListener struct {
	net.Listener
	log *slog.Logger
}

func (l *stampingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stampingConn{Conn: c, log: l.log}, nil
}

type stampingConn struct {
	net.Conn
	log *slog.Logger
}

func (c *stampingConn) Write(p []byte) (int, error) {
	status, ok := serverError(p)
	if !ok {
		return c.Conn.Write(p)
	}
	id := New()
	c.log.Info("request refused before routing", "requestId", id, "status", string(status[:3]))
	var b bytes.Buffer
	b.Grow(len(p) + 64)
	b.WriteString("HTTP/1.1 ")
	b.Write(status)
	b.WriteString("\r\nX-Request-Id: ")
	b.WriteString(id)
	b.Write(p[len("HTTP/1.1 ")+len(status):])
	if _, err := c.Conn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// NetConn is the connection under c: parked long-polls watch its socket.
func (c *stampingConn) NetConn() net.Conn { return c.Conn }

// CloseWrite passes the half-close through: net/http uses it to let the
// client read a 431 before the connection is closed.
func (c *stampingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// serverError returns the status of a write that is one whole answer of
// net/http's own ("400 Bad Request"), or false. Handler answers never match:
// they carry X-Request-Id, Date and a length or chunked framing.
func serverError(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if len(p) > maxServerError || !bytes.HasPrefix(p, []byte(proto)) {
		return nil, false
	}
	i := bytes.Index(p, []byte(serverErrorHeaders))
	if i < 0 {
		return nil, false
	}
	status, text := p[len(proto):i], p[i+len(serverErrorHeaders):]
	if len(status) < 5 || (status[0] != '4' && status[0] != '5') || !isDigit(status[1]) || !isDigit(status[2]) ||
		status[3] != ' ' || bytes.ContainsAny(status, "\r\n") || bytes.ContainsAny(text, "\r\n") {
		return nil, false
	}
	return status, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
