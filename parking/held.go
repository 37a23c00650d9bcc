package parking

import (
	"io"
	"net"
	"net/http"
)

// Poll is what a held request waits for: whether it waits at all (one that
// has its answer already is not counted as parked), and Leave, called once
// when its client hangs up while it waits.
type Poll interface {
	Waits() bool
	Leave()
}

// Held is a request whose connection was taken off the server (Take), to
// be answered later (Answer). Neither the server's writer nor its request
// is kept: they hold the server's buffers.
type Held struct {
	lot    *Lot
	conn   net.Conn
	next   []byte      // the bytes of the client's next request the server had read already
	header savedHeader // the response header the handler had set
	close  bool        // the request asked to close the connection
}

// Take takes the request's connection off the server, with the response
// header its handler has set so far, for the request to be answered later.
// It reports false, having changed nothing, when the request cannot be
// held: no Lot (nil), one not started, closed or where connections cannot
// be watched, HTTP/2 or 1.0, a request with a body, or a writer that cannot
// give up its connection (tests' recorders).
func (l *Lot) Take(w http.ResponseWriter, r *http.Request) (*Held, bool) {
	if r.ContentLength != 0 || (r.Body != nil && r.Body != http.NoBody) {
		return nil, false
	}
	return l.hold(w, r)
}

// TakeRead is Take for a request whose handler has read its body to the
// end: the bytes after the body are the client's next request, which the
// held connection keeps as Take keeps them. It reports false, having changed
// nothing the handler reads, when the body is not at its end (a byte of it
// may be gone then), and as Take does otherwise.
func (l *Lot) TakeRead(w http.ResponseWriter, r *http.Request) (*Held, bool) {
	if !l.canHold(r) {
		return nil, false
	}
	if r.Body != nil && r.Body != http.NoBody {
		var one [1]byte
		if n, err := r.Body.Read(one[:]); n != 0 || err != io.EOF {
			return nil, false
		}
	}
	return l.hold(w, r)
}

// canHold reports whether the Lot can hold a request like r: it is started
// and open, and r is HTTP/1.1.
func (l *Lot) canHold(r *http.Request) bool {
	return l != nil && l.watch != nil && !l.isClosed() && r.ProtoMajor == 1 && r.ProtoMinor == 1
}

// hold takes the connection of a request the Lot may hold, once its body
// is behind it.
func (l *Lot) hold(w http.ResponseWriter, r *http.Request) (*Held, bool) {
	if !l.canHold(r) {
		return nil, false
	}
	header := saveHeader(w.Header())
	conn, next, ok := l.take(w)
	if !ok {
		return nil, false
	}
	return &Held{lot: l, conn: conn, next: next, header: header, close: r.Close}, true
}

// FirstRead runs read, the held request's first read, on one of the Lot's
// few goroutines for them (FirstReads).
func (h *Held) FirstRead(read func()) { h.lot.firstRead(read) }

// Watch counts the request as parked while poll waits, and has poll leave
// when the client hangs up, until release is called: call it before Answer.
func (h *Held) Watch(poll Poll) (release func()) { return h.lot.watchPoll(h.conn, poll) }

// Answer answers the held request: write writes the answer to w as a
// handler would, and says whether the connection may serve the client's
// next request. The answer is then sent as net/http would have sent it,
// and the connection held for the client's next request, or closed (when
// the request asked for that, write said so, or the Lot is closed).
func (h *Held) Answer(write func(w http.ResponseWriter) (keep bool)) {
	res := &lateResponse{header: h.header.header()}
	keep := write(res)
	h.lot.answered(h.conn, h.next, res, !h.close && keep)
}

// IsClosed reports whether ch is closed, without waiting: a face answering a
// held request uses it to say whether the connection may be kept (not once
// its service is draining).
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
