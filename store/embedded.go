package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync/atomic"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// embedded is the in-process store: a Redis-compatible server that listens on
// no port. The store's client reaches it through in-memory pipes, so no other
// process can connect to it at all; it also wants a password made at start
// (256 random bits, kept only in the client's options and never logged), so
// a connection that is not the store's own is refused as well.
type embedded struct {
	srv    *miniredis.Miniredis
	closed atomic.Bool
}

// openEmbedded starts the server and returns it with the options of a client
// that reaches it: the same go-redis client as for a real Redis, dialing a
// pipe instead of a socket.
func openEmbedded(cfg Config) (*embedded, *redis.Options) {
	e := &embedded{srv: miniredis.NewMiniRedis()}
	e.srv.ClockTTL(true)
	password := newPassword()
	e.srv.RequireAuth(password)
	return e, &redis.Options{
		Addr: "embedded", Password: password, Dialer: e.dial, PoolSize: cfg.PoolSize,
		ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, DialTimeout: cfg.Timeout,
		MaxRetries: noRetries, ContextTimeoutEnabled: true,
	}
}

// dial opens an in-memory connection. Once the store is closed it refuses:
// the server would otherwise start again, empty, for a late reconnect.
func (e *embedded) dial(context.Context, string, string) (net.Conn, error) {
	if e.closed.Load() {
		return nil, net.ErrClosed
	}
	return e.srv.Dial()
}

func (e *embedded) close() {
	e.closed.Store(true)
	e.srv.Close()
}

// newPassword is 256 random bits, hex.
func newPassword() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
