// Package store is the Redis layer: client setup for standalone Redis, Redis
// Cluster and the embedded in-memory server (store.go, embedded.go), the key
// builder (keys.go), the Lua scripts with one reply parser each (scripts.go,
// store/lua, and luanames.go for the names Go and Lua share), the reads and
// writes the services make, the logs as sources of the reads that wait
// (LogSource), and the fan-in readers of the wake streams (fanin.go), which
// hand each wake-up to the registry of local waits. It knows byte blobs,
// stream ids and partitions; the meaning of a task lives in package tasks.
//
// It imports ids, idem, paging, metrics, problem, worker, waits (the
// registry it hands each wake-up read from Redis) and api/wire (the statuses
// and close reasons the scripts write, handed to them by luanames.go) of
// this module, never a service: ids, tokens, caches and the registry of
// waits are not Redis and live in packages of their own.
package store

import (
	"cmp"
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
	PoolSize   int           // default 64 + Partitions
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "th:")
	c.Partitions = cmp.Or(c.Partitions, 16)
	c.Timeout = cmp.Or(c.Timeout, 2*time.Second)
	c.PoolSize = cmp.Or(c.PoolSize, 64+c.Partitions)
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

	scripts   *scripts
	commit    *groupCommit // sends the scripts of concurrent requests together
	embedded  *embedded    // the in-process server, when no Redis is configured
	newClient func(pool int) redis.UniversalClient
	timeout   time.Duration
	metrics   *metrics.Metrics
	unroute   func() // ends the routing of go-redis's lines to this store's log
	own       ownWakes
}

// client makes a client of the store's Redis with its hooks.
func (s *Store) client(pool int) redis.UniversalClient {
	c := s.newClient(pool)
	c.AddHook(budget{timeout: s.timeout})
	if s.metrics != nil {
		c.AddHook(instrument{m: s.metrics})
	}
	return c
}

// Blocking is a client of one worker's own for its blocking reads (XREAD
// and XREADGROUP with BLOCK). Closing it ends a read that waits in Redis, so
// a worker stops at once, before the store is closed, and the blocked reads
// never hold connections of the pool that requests use.
type Blocking struct {
	s   *Store
	rdb redis.UniversalClient
}

// NewBlocking makes a client with conns connections (one per concurrent
// blocking read).
func (s *Store) NewBlocking(conns int) *Blocking {
	return &Blocking{s: s, rdb: s.client(conns)}
}

// Close ends the client's reads.
func (b *Blocking) Close() error { return b.rdb.Close() }

// Open connects (or starts the embedded server), loads the scripts and checks
// the store answers. It does not fail when Redis is down: the service starts
// unready and recovers when Redis comes back.
func Open(ctx context.Context, cfg Config, m *metrics.Metrics, log *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	scripts, err := loadScripts()
	if err != nil {
		return nil, err
	}
	s := &Store{Keys: NewKeys(cfg.Prefix), scripts: scripts, Partitions: cfg.Partitions, metrics: m}
	switch {
	case cfg.URL == "":
		// The embedded store is in this process: no network can stall it,
		// and it runs one command at a time, so a timeout would only turn a
		// long scan under load into 503s for everyone queued behind it.
		cfg.Timeout = max(cfg.Timeout, embeddedTimeout)
		var opts *redis.Options
		if s.embedded, opts, err = openEmbedded(cfg); err != nil {
			return nil, err
		}
		s.Kind = KindEmbedded
		s.newClient = func(pool int) redis.UniversalClient {
			o := *opts
			o.PoolSize = pool
			return redis.NewClient(&o)
		}
	case cfg.Cluster:
		s.Kind = KindRedisCluster
		s.newClient = func(pool int) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{
				Addrs: strings.Split(cfg.URL, ","), PoolSize: pool,
				ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout, DialTimeout: cfg.Timeout,
				MaxRetries: noRetries, ContextTimeoutEnabled: true,
			})
		}
	default:
		opts, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("parse redis url: %w", errors.New(redactURL(err.Error())))
		}
		opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
		opts.MaxRetries = noRetries
		opts.ContextTimeoutEnabled = true
		s.Kind = KindRedis
		s.newClient = func(pool int) redis.UniversalClient {
			o := *opts
			o.PoolSize = pool
			return redis.NewClient(&o)
		}
	}
	s.timeout = cfg.Timeout
	s.unroute = routeRedisLogs(log)
	s.RDB = s.client(cfg.PoolSize)
	s.commit = newGroupCommit(s.RDB, commitLanes)
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
	s.commit.close()
	err := s.RDB.Close()
	if s.embedded != nil {
		s.embedded.close()
	}
	s.unroute()
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
