package store

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// budget bounds the whole of one command (waiting for a pooled connection,
// the cluster client's redirects and retries, the reply) by the store's
// timeout, so a stalled Redis answers within one timeout and not after
// several. Blocking reads carry their own deadline and are left alone.
type budget struct{ timeout time.Duration }

func (b budget) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (b budget) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if blocking(cmd) {
			return next(ctx, cmd)
		}
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (b budget) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if blocking(c) {
				return next(ctx, cmds)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		return next(ctx, cmds)
	}
}

// blocking reports a command that waits on the server by design.
func blocking(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "xread", "xreadgroup", "blpop", "brpop", "bzpopmin", "bzpopmax", "wait":
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && (s == "block" || s == "BLOCK") {
				return true
			}
		}
		return cmd.Name() != "xread" && cmd.Name() != "xreadgroup"
	}
	return false
}
