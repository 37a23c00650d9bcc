// Package store is the Redis layer: client setup for standalone Redis, Redis
// Cluster and the embedded in-memory server (store.go, embedded.go), the key
// builder (keys.go), the Lua scripts with one reply parser each (scripts.go,
// store/lua, and luanames.go for the names Go and Lua share), the reads and
// writes the services make, and the wake-ups: the fan-in readers
// (fanin.go), the registry of local waits they wake (waiters.go) and the log
// reads that wait on it (logreader.go). It knows byte blobs, stream ids and
// partitions; the meaning of a task lives in package tasks.
//
// It imports ids, metrics and problem of this module, never a service: ids, tokens
// and caches are not Redis and live in packages of their own.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
)

// Kinds of store, as /v1/info reports them.
const (
	KindEmbedded     = "embedded"
	KindRedis        = "redis"
	KindRedisCluster = "redis-cluster"
)

// Config says which Redis to use. The zero value is the embedded store with
// 16 partitions and the prefix "th:".
type Config struct {
	URL        string        // redis:// or rediss:// URL, or comma-separated host:port seeds with Cluster
	Cluster    bool          // URL lists Redis Cluster nodes
	Prefix     string        // every key starts with it; default "th:"
	Partitions int           // fixed per deployment; default 16
	Timeout    time.Duration // per-command read/write timeout; default 2s
	PoolSize   int           // default 64 + 2 × Partitions (the wake readers and the outbox readers each hold one per partition)
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "th:"
	}
	if c.Partitions == 0 {
		c.Partitions = 16
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Second
	}
	if c.PoolSize == 0 {
		c.PoolSize = 64 + 2*c.Partitions
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Partitions < 1 || c.Partitions > ids.MaxPartitions {
		return fmt.Errorf("partitions must be 1 to %d", ids.MaxPartitions)
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		return errors.New("key prefix must not contain braces")
	}
	if c.Cluster && c.URL == "" {
		return errors.New("cluster mode needs the node addresses")
	}
	return nil
}

// noRetries turns off the client library's own re-sending: it re-sends a
// command after a read timeout while the first may still run, and a stall
// would cost two timeouts. Writes are retried by exec instead, under their
// command id.
const noRetries = -1

// Store is the handle every service uses.
type Store struct {
	RDB        redis.UniversalClient
	Keys       Keys
	Partitions int
	Kind       string

	scripts  *scripts
	embedded *embedded // the in-process server, when no Redis is configured
}

// Open connects (or starts the embedded server), loads the scripts and checks
// the store answers. It does not fail when Redis is down: the service starts
// unready and recovers when Redis comes back.
func Open(ctx context.Context, cfg Config, m *metrics.Metrics, log *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	routeRedisLogs()
	scripts, err := loadScripts()
	if err != nil {
		return nil, err
	}
	s := &Store{Keys: NewKeys(cfg.Prefix), scripts: scripts, Partitions: cfg.Partitions}
	switch {
	case cfg.URL == "":
		var opts *redis.Options
		s.embedded, opts = openEmbedded(cfg)
		s.Kind = KindEmbedded
		s.RDB = redis.NewClient(opts)
	case cfg.Cluster:
		s.Kind = KindRedisCluster
		s.RDB = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: strings.Split(cfg.URL, ","), PoolSize: cfg.PoolSize,
			ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, DialTimeout: cfg.Timeout,
			MaxRetries: noRetries, ContextTimeoutEnabled: true,
		})
	default:
		opts, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("parse redis url: %w", errors.New(redactURL(err.Error())))
		}
		opts.PoolSize = cfg.PoolSize
		opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
		opts.MaxRetries = noRetries
		opts.ContextTimeoutEnabled = true
		s.Kind = KindRedis
		s.RDB = redis.NewClient(opts)
	}
	s.RDB.AddHook(budget{timeout: cfg.Timeout})
	if m != nil {
		s.RDB.AddHook(instrument{m: m})
	}
	if err := s.Ready(ctx); err != nil && log != nil {
		log.Warn("store not ready at start", "kind", s.Kind, "err", err)
	}
	return s, nil
}

// Ready pings the store and (again) loads the scripts, so a Redis that
// restarted empty gets them back before the next command.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.RDB.Ping(ctx).Err(); err != nil {
		return unavailable(err)
	}
	if err := s.scripts.preload(ctx, s.RDB); err != nil {
		return unavailable(err)
	}
	return nil
}

// Close closes the client and stops the embedded server.
func (s *Store) Close() error {
	err := s.RDB.Close()
	if s.embedded != nil {
		s.embedded.close()
	}
	return err
}

// redactURL keeps a password in a bad URL out of errors and logs.
func redactURL(msg string) string {
	if i := strings.Index(msg, "@"); i >= 0 {
		if j := strings.Index(msg, "://"); j >= 0 && j < i {
			return msg[:j+3] + "***" + msg[i:]
		}
	}
	return msg
}
