package store

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

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
