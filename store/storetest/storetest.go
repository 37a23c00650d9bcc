// Package storetest gives tests a store of each kind, with a key prefix of
// their own so tests run in parallel and clean up only what they made.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
)

// Backend is one kind of store a suite runs against.
type Backend struct {
	Name   string
	Config func(t testing.TB) store.Config
	// Shared is true for a store several processes can use at once (a real
	// Redis); the embedded server belongs to the one process that runs it.
	Shared bool
}

// Backends are the three kinds: real standalone Redis, a real 3-node Redis
// Cluster and the embedded server.
func Backends() []Backend {
	return []Backend{
		{Name: "redis", Config: Standalone, Shared: true},
		{Name: "cluster", Config: Cluster, Shared: true},
		{Name: "embedded", Config: Embedded},
	}
}

// EachBackend runs fn on every backend, each as a parallel subtest named
// after it with a fresh config (a key prefix of its own).
func EachBackend(t *testing.T, fn func(t *testing.T, cfg store.Config)) {
	t.Helper()
	each(t, false, fn)
}

// EachSharedBackend is EachBackend on the backends several replicas can
// share: for tests that start more than one server on one store.
func EachSharedBackend(t *testing.T, fn func(t *testing.T, cfg store.Config)) {
	t.Helper()
	each(t, true, fn)
}

// Open opens a store on cfg that reports to m, ready (reachable, scripts
// loaded), and closes it when the test ends.
func Open(t testing.TB, cfg store.Config, m *metrics.Metrics) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), cfg, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func each(t *testing.T, sharedOnly bool, fn func(t *testing.T, cfg store.Config)) {
	t.Helper()
	for _, b := range Backends() {
		if sharedOnly && !b.Shared {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.Config(t))
		})
	}
}

// Prefix is a fresh key prefix for one test.
func Prefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "tht" + hex.EncodeToString(b) + ":"
}

// StandaloneURL is the test Redis: TASKHOOK_TEST_REDIS_URL, or the default
// local one.
func StandaloneURL() string {
	if u := os.Getenv("TASKHOOK_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Standalone is a config for the test Redis with a fresh prefix; the keys
// under it are deleted when the test ends.
func Standalone(t testing.TB) store.Config {
	t.Helper()
	url := StandaloneURL()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("TASKHOOK_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	require(t, rdb.Ping(context.Background()).Err(), "standalone Redis at "+opts.Addr)
	cfg := store.Config{URL: url, Prefix: Prefix()}
	t.Cleanup(func() {
		defer rdb.Close()
		deletePrefix(rdb, cfg.Prefix)
	})
	return cfg
}

// Redis is a client of the standalone Redis of cfg (a config Standalone
// gave), for tests that read or write keys behind the store's back; it is
// closed when the test ends.
func Redis(t testing.TB, cfg store.Config) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Cluster is a config for the test Redis Cluster (TASKHOOK_TEST_REDIS_CLUSTER).
func Cluster(t testing.TB) store.Config {
	t.Helper()
	nodes := os.Getenv("TASKHOOK_TEST_REDIS_CLUSTER")
	if nodes == "" {
		if os.Getenv("TASKHOOK_TEST_REQUIRE_REDIS") != "" {
			t.Fatal("TASKHOOK_TEST_REDIS_CLUSTER is not set: run the tests with `make test`")
		}
		t.Skip("no Redis Cluster: TASKHOOK_TEST_REDIS_CLUSTER is not set (make test starts one)")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(nodes, ",")})
	require(t, rdb.Ping(context.Background()).Err(), "Redis Cluster at "+nodes)
	cfg := store.Config{URL: nodes, Cluster: true, Prefix: Prefix()}
	t.Cleanup(func() {
		defer rdb.Close()
		_ = rdb.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
			deletePrefix(c, cfg.Prefix)
			return nil
		})
	})
	return cfg
}

// Embedded is the embedded store's config (each server gets its own).
func Embedded(t testing.TB) store.Config { return store.Config{Prefix: Prefix()} }

func require(t testing.TB, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("TASKHOOK_TEST_REQUIRE_REDIS") != "" {
		t.Fatalf("%s does not answer: %v", what, err)
	}
	t.Skipf("%s does not answer (%v); `make test` starts one", what, err)
}

// deletePrefix removes the keys a test made, and only those.
func deletePrefix(rdb *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			rdb.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	for _, k := range batch {
		rdb.Unlink(ctx, k) // one by one: keys of several slots
	}
}

// Dump reads every key under prefix with its value as text (every field and
// member of a hash, stream, sorted set, set or list, joined by newlines), on
// each master of a cluster: for tests that check what Redis holds.
func Dump(t testing.TB, rdb redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	var mu sync.Mutex
	dump := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			var parts []string
			switch typ := c.Type(ctx, key).Val(); typ {
			case "string":
				parts = append(parts, c.Get(ctx, key).Val())
			case "hash":
				for f, v := range c.HGetAll(ctx, key).Val() {
					parts = append(parts, f, v)
				}
			case "stream":
				for _, m := range c.XRange(ctx, key, "-", "+").Val() {
					for f, v := range m.Values {
						parts = append(parts, m.ID, f, fmt.Sprint(v))
					}
				}
			case "zset":
				parts = append(parts, c.ZRange(ctx, key, 0, -1).Val()...)
			case "set":
				parts = append(parts, c.SMembers(ctx, key).Val()...)
			case "list":
				parts = append(parts, c.LRange(ctx, key, 0, -1).Val()...)
			case "none": // expired since the scan saw it
			default:
				return fmt.Errorf("key %s has type %s", key, typ)
			}
			mu.Lock()
			out[key] = strings.Join(parts, "\n")
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.Client:
		err = dump(ctx, c)
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, dump)
	default:
		err = fmt.Errorf("cannot scan a %T", rdb)
	}
	if err != nil {
		t.Fatalf("dump %s*: %v", prefix, err)
	}
	return out
}

// WaitFor polls cond until it holds, failing the test after 15 s. It waits on
// a condition; it never orders events by time. The pause between looks
// grows from 1 ms to 25 ms, so a condition that holds soon is seen soon and
// one that takes seconds (a retry's backoff, a replica starting) is not
// asked hundreds of times a second: many conditions read a server's
// metrics page or Redis, which costs the suite's CPU.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pause)
		pause = min(pause*3/2, 25*time.Millisecond)
	}
}

// A task's record is a string (store.DecodeRecord reads it); one an earlier
// version wrote, and every other record, a hash. These read and write
// either, for tests that look at what is stored or write what an earlier
// version stored. They are not atomic.

// Deleted is the value SetRecordFields takes a field out for.
const Deleted = "\x00deleted"

// RecordFields is the fields of the record at key by name (nil when there
// is no such record).
func RecordFields(t testing.TB, s *store.Store, key string) map[string]string {
	t.Helper()
	ctx := context.Background()
	raw, err := s.RDB.Get(ctx, key).Result()
	switch {
	case err == redis.Nil:
		return nil
	case isWrongType(err):
		h, err := s.RDB.HGetAll(ctx, key).Result()
		must(t, err, "read a record's hash")
		return h
	}
	must(t, err, "read a record")
	fields, err := store.DecodeRecord(raw)
	must(t, err, "decode a record")
	return fields
}

// RecordField is one field of the record at key; ok is false when it has
// none.
func RecordField(t testing.TB, s *store.Store, key, name string) (value string, ok bool) {
	t.Helper()
	value, ok = RecordFields(t, s, key)[name]
	return value, ok
}

// RecordNames is the names of the record's fields, in no order.
func RecordNames(t testing.TB, s *store.Store, key string) []string {
	t.Helper()
	var names []string
	for n := range RecordFields(t, s, key) {
		names = append(names, n)
	}
	return names
}

// SetRecordFields writes fields of the record at key (name, value, ...;
// Deleted takes a field out), keeping its expiry, as the scripts do.
func SetRecordFields(t testing.TB, s *store.Store, key string, kv ...string) {
	t.Helper()
	ctx := context.Background()
	raw, err := s.RDB.Get(ctx, key).Result()
	if isWrongType(err) {
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == Deleted {
				err = s.RDB.HDel(ctx, key, kv[i]).Err()
			} else {
				err = s.RDB.HSet(ctx, key, kv[i], kv[i+1]).Err()
			}
			must(t, err, "write a record's hash")
		}
		return
	}
	must(t, err, "read a record")
	fields, err := store.DecodeRecord(raw)
	must(t, err, "decode a record")
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == Deleted {
			delete(fields, kv[i])
		} else {
			fields[kv[i]] = kv[i+1]
		}
	}
	must(t, s.RDB.SetArgs(ctx, key, store.EncodeRecord(fields), redis.SetArgs{KeepTTL: true}).Err(), "write a record")
}

// RecordAsHash rewrites a task's record as an earlier version kept it: a
// hash of the same fields, with the same expiry.
func RecordAsHash(t testing.TB, s *store.Store, key string) {
	t.Helper()
	ctx := context.Background()
	fields := RecordFields(t, s, key)
	at, err := s.RDB.PExpireTime(ctx, key).Result()
	must(t, err, "read a record's expiry")
	pipe := s.RDB.TxPipeline()
	pipe.Del(ctx, key)
	for n, v := range fields {
		pipe.HSet(ctx, key, n, v)
	}
	pipe.PExpireAt(ctx, key, time.UnixMilli(at.Milliseconds()))
	_, err = pipe.Exec(ctx)
	must(t, err, "write a record as a hash")
}

func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
