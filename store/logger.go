package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
)

var setLoggerOnce sync.Once

// redisLog sends go-redis's own messages (pool dial failures and the like)
// to slog as warnings, with the process's default handler, instead of the
// standard logger's plain text.
type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	slog.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

func routeRedisLogs() { setLoggerOnce.Do(func() { redis.SetLogger(redisLog{}) }) }
