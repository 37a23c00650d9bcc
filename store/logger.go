package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// redisClientMessage is the message of go-redis's own log lines.
const redisClientMessage = "redis client"

// redisLogs is where go-redis's own messages (a pool that cannot dial, and
// the like) go. go-redis has one logger per process; its lines go to the
// log of the store opened last and not yet closed (in a process with one
// server, that server's JSON log), and to slog's default with none open.
var redisLogs struct {
	once sync.Once
	mu   sync.Mutex
	open []*slog.Logger
}

type redisLog struct{}

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	redisLogs.mu.Lock()
	log := slog.Default()
	if n := len(redisLogs.open); n > 0 {
		log = redisLogs.open[n-1]
	}
	redisLogs.mu.Unlock()
	log.WarnContext(ctx, redisClientMessage, "detail", fmt.Sprintf(format, v...))
}

// routeRedisLogs sends go-redis's lines to log until release is called.
func routeRedisLogs(log *slog.Logger) (release func()) {
	redisLogs.once.Do(func() { redis.SetLogger(redisLog{}) })
	if log == nil {
		return func() {}
	}
	redisLogs.mu.Lock()
	redisLogs.open = append(redisLogs.open, log)
	redisLogs.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			redisLogs.mu.Lock()
			defer redisLogs.mu.Unlock()
			if i := slices.Index(redisLogs.open, log); i >= 0 {
				redisLogs.open = slices.Delete(redisLogs.open, i, i+1)
			}
		})
	}
}

// RepeatsWhileDown reports whether a log record is one that repeats for as
// long as the store is unavailable: a warning of go-redis's own, or one
// whose err attribute is ErrUnavailable (a fan-in reader, the notification
// outbox, the session-cancel resumer, each retrying). app writes those at
// most once an interval (package loglimit).
func RepeatsWhileDown(r slog.Record) bool {
	if r.Level < slog.LevelWarn {
		return false
	}
	if r.Message == redisClientMessage {
		return true
	}
	down := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindAny {
			if err, ok := a.Value.Any().(error); ok && errors.Is(err, ErrUnavailable) {
				down = true
			}
		}
		return !down
	})
	return down
}
