// Package receivertest is a notification receiver for tests: a real HTTP
// server on loopback that records every delivery and answers what the test
// tells it to.
//
// It imports nothing of the module.
package receivertest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Delivery is one request the receiver got.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// ID is the delivery's webhook-id.
func (d Delivery) ID() string { return d.Header.Get("webhook-id") }

// Receiver records deliveries. Answer decides each answer from the number
// of the request (1 for the first); it may block (until the test ends, at
// the latest: Release is called at cleanup).
type Receiver struct {
	*httptest.Server
	Answer func(n int, w http.ResponseWriter, r *http.Request)

	mu      sync.Mutex
	got     []Delivery
	changed chan struct{}
	release chan struct{}
	once    sync.Once
}

// Status answers every request with code.
func Status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// New starts a receiver that answers with answer (nil: 204).
func New(t testing.TB, answer func(n int, w http.ResponseWriter, r *http.Request)) *Receiver {
	return NewAt(t, "127.0.0.1", answer)
}

// NewAt starts a receiver on a loopback address of its own choosing, such as
// 127.0.0.2: a host apart from the receivers on 127.0.0.1, for what is
// shared by host.
func NewAt(t testing.TB, ip string, answer func(n int, w http.ResponseWriter, r *http.Request)) *Receiver {
	t.Helper()
	if answer == nil {
		answer = Status(http.StatusNoContent)
	}
	rc := &Receiver{Answer: answer, changed: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("receiver on %s: %v", ip, err)
	}
	rc.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(rc.serve)}}
	rc.Server.Start()
	t.Cleanup(func() {
		rc.Release()
		rc.Server.Close()
	})
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	rc.mu.Lock()
	rc.got = append(rc.got, Delivery{Header: r.Header.Clone(), Body: body})
	n := len(rc.got)
	close(rc.changed)
	rc.changed = make(chan struct{})
	rc.mu.Unlock()
	rc.Answer(n, w, r)
}

// Block is an answer that holds the request until Release (or the
// client leaves).
func (rc *Receiver) Block(_ int, w http.ResponseWriter, r *http.Request) {
	select {
	case <-rc.release:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusNoContent)
}

// Release lets every blocked answer go.
func (rc *Receiver) Release() { rc.once.Do(func() { close(rc.release) }) }

// Got is every delivery so far, in arrival order.
func (rc *Receiver) Got() []Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Delivery(nil), rc.got...)
}

// Changed is closed at the next delivery.
func (rc *Receiver) Changed() <-chan struct{} {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.changed
}
