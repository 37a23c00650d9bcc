package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/metrics"
)

type poolKey struct{}

// Background marks ctx as traffic no request waits on (the fan-in readers,
// deliveries, sweeps), counted apart from the traffic of requests under the
// pool "wakeups".
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, poolKey{}, "wakeups")
}

func poolOf(ctx context.Context) string {
	if p, ok := ctx.Value(poolKey{}).(string); ok {
		return p
	}
	return "requests"
}

// instrument counts commands, round trips, errors and latency.
type instrument struct{ m *metrics.Metrics }

func (h instrument) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h instrument) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(ctx, start, []redis.Cmder{cmd})
		return err
	}
}

func (h instrument) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe(ctx, start, cmds)
		return err
	}
}

func (h instrument) observe(ctx context.Context, start time.Time, cmds []redis.Cmder) {
	pool := poolOf(ctx)
	if handshake(cmds) {
		pool = "connect" // a new pooled connection's set-up, not the work of a request
	}
	h.m.RedisRoundTrips.WithLabelValues(pool).Inc()
	h.m.RedisLatency.WithLabelValues(pool).Observe(time.Since(start).Seconds())
	for _, c := range cmds {
		name := strings.ToLower(c.Name())
		h.m.RedisCommands.WithLabelValues(name).Inc()
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			h.m.RedisErrors.WithLabelValues(name).Inc()
		}
	}
}

// handshake reports whether cmds are what go-redis sends to set up a new
// connection (HELLO, AUTH, SELECT, CLIENT SETINFO ...).
func handshake(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		switch strings.ToLower(c.Name()) {
		case "hello", "auth", "select", "client", "readonly":
		default:
			return false
		}
	}
	return len(cmds) > 0
}
