package mcp

import (
	"net/http"
)

// sseStream is the answer to a request as a stream of server-sent events:
// notifications and requests of the server, then the response.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// beginStream answers the request with a stream, if it has not yet.
func (q *request) beginStream() {
	if q.stream != nil {
		return
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	q.w.WriteHeader(http.StatusOK)
	q.stream = &sseStream{w: q.w, rc: http.NewResponseController(q.w)}
	_ = q.stream.rc.Flush()
}

// send writes one message as an event, at once.
func (s *sseStream) send(v any) error {
	b := make([]byte, 0, 256)
	b = append(b, "event: message\ndata: "...)
	b = append(b, marshal(v)...)
	b = append(b, "\n\n"...)
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment keeps an idle stream open through proxies.
func (s *sseStream) comment() error {
	if _, err := s.w.Write([]byte(":\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// notify sends a notification (or, with an id, a request) on the stream.
func (q *request) notify(id, method string, params any) error {
	return q.stream.send(notification{JSONRPC: "2.0", ID: id, Method: method, Params: params})
}

// draining reports whether the server shuts down.
func (h *handler) draining() bool {
	select {
	case <-h.cfg.Draining:
		return true
	default:
		return false
	}
}
