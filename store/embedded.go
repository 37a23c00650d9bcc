package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// embedded is the in-process store: a Redis-compatible server that listens on
// no port. The store's client reaches it through in-memory connections
// (memConnPair), so no other process can connect to it at all; it also wants
// a password made at start (256 random bits, kept only in the client's
// options and never logged), so a connection that is not the store's own is
// refused as well.
type embedded struct {
	srv     *miniredis.Miniredis
	server  *server.Server // srv's, which serves the connections
	mu      sync.Mutex     // orders dial and close
	closed  bool
	stop    chan struct{} // ends the clock
	ticking sync.WaitGroup
}

// The server's clock, which its TTLs, stream ids and idle times go by, moves
// in steps. Each move sweeps every key (a TTL is a duration each move
// shortens), so a clock read afresh by every command cost every command a
// sweep (half a millisecond among a thousand keys, sixty among thirty
// thousand), and as much again for each call a script made. A goroutine of its own moves the
// clock and does the sweep, clockStepShare times as long after the last
// move as the last sweep took, within [clockMinStep, clockMaxStep]: sweeps
// take a small share of the time, and the server's clock is behind the real
// one by at most a step. So a key given an expiry time (PEXPIREAT, as every
// record is) never expires early and at most a step late; one given a TTL
// (the day-long ones of command records) is off by at most a step.
const (
	clockMinStep   = 10 * time.Millisecond
	clockMaxStep   = time.Second
	clockStepShare = 20
)

// openEmbedded starts the server and returns it with the options of a client
// that reaches it: the same go-redis client as for a real Redis, dialing an
// in-memory connection instead of a socket.
// embeddedTimeout is the least per-command timeout of the embedded store.
const embeddedTimeout = 30 * time.Second

func openEmbedded(cfg Config) (*embedded, *redis.Options, error) {
	srv := miniredis.NewMiniRedis()
	srv.SetTime(time.Now())
	srv.ClockTTL(true)
	password := newPassword()
	srv.RequireAuth(password)
	// Dial starts the server without a listener; its own connection, a
	// synchronous net.Pipe, is not the one the store uses (see memConnPair).
	c, err := srv.Dial()
	if err != nil {
		return nil, nil, fmt.Errorf("start the embedded store: %w", err)
	}
	_ = c.Close()
	e := &embedded{srv: srv, server: srv.Server(), stop: make(chan struct{})}
	e.ticking.Add(1)
	go e.tick()
	return e, &redis.Options{
		Addr: "embedded", Password: password, Dialer: e.dial, PoolSize: cfg.PoolSize,
		ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, DialTimeout: cfg.Timeout,
		MaxRetries: noRetries, ContextTimeoutEnabled: true,
	}, nil
}

// dial opens an in-memory connection and has the server serve its other end.
// Once the store is closed it refuses: the server would otherwise serve a
// late reconnect that nothing closes.
func (e *embedded) dial(context.Context, string, string) (net.Conn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, net.ErrClosed
	}
	client, served := memConnPair()
	e.server.ServeConn(served)
	return client, nil
}

// tick moves the server's clock until the store closes.
func (e *embedded) tick() {
	defer e.ticking.Done()
	step := time.NewTimer(clockMinStep)
	defer step.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-step.C:
		}
		start := time.Now()
		e.srv.SetTime(start)
		e.srv.DB(0) // the first use of a database after a move sweeps: here, not in a command
		step.Reset(min(max(clockStepShare*time.Since(start), clockMinStep), clockMaxStep))
	}
}

func (e *embedded) close() {
	e.mu.Lock()
	if !e.closed {
		close(e.stop)
	}
	e.closed = true
	e.mu.Unlock()
	e.ticking.Wait()
	e.srv.Close() // closes every connection it serves
}

// newPassword is 256 random bits, hex.
func newPassword() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
