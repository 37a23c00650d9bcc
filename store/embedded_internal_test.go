package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The embedded store listens on no port, and a connection to it without the
// password made at start is refused: no other process (and no other client
// of this one) can read or change its keys.
func TestEmbeddedStoreTakesNoOutsideConnection(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	s, err := Open(ctx, Config{}, nil, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("the store's own client: %v", err)
	}
	if err := s.RDB.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if addr := s.embedded.srv.Server().Addr(); addr != nil {
		t.Fatalf("the embedded store listens on %s", addr)
	}

	dialer := func(context.Context, string, string) (net.Conn, error) { return s.embedded.srv.Dial() }
	password := s.RDB.(*redis.Client).Options().Password
	if len(password) != 64 {
		t.Fatalf("the password is %d hex characters, want 64 (256 bits)", len(password))
	}
	for name, pw := range map[string]string{"no password": "", "a wrong password": strings.Repeat("0", 64)} {
		other := redis.NewClient(&redis.Options{Addr: "embedded", Password: pw, Dialer: dialer, MaxRetries: -1})
		v, err := other.Get(ctx, "k").Result()
		other.Close()
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "AUTH") && !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("a client with %s read %q, err %v; want an authentication error", name, v, err)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the password is in the logs")
	}

	s.Close()
	if _, err := s.embedded.dial(ctx, "", ""); err == nil {
		t.Errorf("the closed store took a new connection")
	}
}

// The embedded store answers a pipeline of any length, with arguments and
// replies of any size: its connections never make the client's writes wait
// for the server's, which wait for the client's reads (see memConnPair).
// Over miniredis's own synchronous pipe the first of these pipelines timed
// out.
func TestEmbeddedStoreAnswersPipelinesOfAnySize(t *testing.T) {
	ctx := context.Background()
	// A long timeout: a pipeline that deadlocks fails the test, a slow
	// machine does not.
	s, err := Open(ctx, Config{Timeout: 30 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rdb := s.RDB

	const n = 10000
	value := func(i int) string { return fmt.Sprintf("%0100d", i) }
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.HSet(ctx, "small", fmt.Sprint(i), value(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("a pipeline of %d writes: %v", n, err)
	}
	pipe = rdb.Pipeline()
	gets := make([]*redis.StringCmd, n)
	for i := range gets {
		gets[i] = pipe.HGet(ctx, "small", fmt.Sprint(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("a pipeline of %d reads: %v", n, err)
	}
	for i, g := range gets {
		if g.Val() != value(i) {
			t.Fatalf("read %d: %q", i, g.Val())
		}
	}

	// Large arguments and large replies: each script stores and returns
	// its argument.
	echo := redis.NewScript("redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]")
	big := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 128<<10) }
	const scripts = 16
	pipe = rdb.Pipeline()
	evals := make([]*redis.Cmd, scripts)
	for i := range evals {
		evals[i] = echo.Eval(ctx, pipe, []string{fmt.Sprintf("big:%d", i)}, big(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("a pipeline of %d scripts of 128 KiB: %v", scripts, err)
	}
	for i, e := range evals {
		if v, _ := e.Text(); v != big(i) {
			t.Fatalf("script %d answered %d bytes, want its 128 KiB argument", i, len(v))
		}
	}

	// A scan with a large count answers in one reply.
	fields, _, err := rdb.HScan(ctx, "small", 0, "*", 2*n).Result()
	if err != nil || len(fields) != 2*n {
		t.Fatalf("scan: %d fields and values, %v; want %d", len(fields), err, 2*n)
	}
}

// On the embedded store a key given an expiry time (PEXPIREAT, as records
// are) never expires before it, and a key given a TTL no more than a clock
// step before it; both do expire. The server's clock moves in steps, and
// only ever behind the real one.
func TestEmbeddedKeysExpireNeverEarly(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const ttl = 200 * time.Millisecond
	set := time.Now()
	if err := s.RDB.Set(ctx, "ttl", "v", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	// An expiry time goes to the server in whole milliseconds; the test's
	// must be one too, or the key may go up to a millisecond before it.
	at := time.Now().Add(ttl).Truncate(time.Millisecond)
	if err := s.RDB.Set(ctx, "at", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.RDB.PExpireAt(ctx, "at", at).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		key      string
		notUntil time.Time
	}{{"at", at}, {"ttl", set.Add(ttl - clockMaxStep)}} {
		for {
			n, err := s.RDB.Exists(ctx, k.key).Result()
			checked := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				if checked.Before(k.notUntil) {
					t.Errorf("key %s expired %v early", k.key, k.notUntil.Sub(checked))
				}
				break
			}
			if checked.After(k.notUntil.Add(time.Minute)) {
				t.Fatalf("key %s still there a minute after its time", k.key)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
