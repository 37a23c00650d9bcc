package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Durable makes a RedisServer write its append-only file on every write, so
// a restart comes back with exactly what was applied.
var Durable = []string{"--appendonly", "yes", "--appendfsync", "always"}

// RedisServer is a redis-server of one test's own, which the test stops and
// starts again (an outage) or pauses with a signal (a stall). It is stopped
// when the test ends.
type RedisServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedisServer starts a redis-server (TASKHOOK_TEST_REDIS_SERVER_BIN,
// or the one on the PATH; the test skips without one) on a loopback port,
// with args added to a snapshot-free configuration, and waits until it
// answers.
func StartRedisServer(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin := os.Getenv("TASKHOOK_TEST_REDIS_SERVER_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			t.Skip("no redis-server binary (make test installs one)")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &RedisServer{t: t, bin: bin, port: port, dir: t.TempDir(), args: args}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is the server's host:port, the same across restarts.
func (r *RedisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// Start starts the server (again, after Stop) and waits until it answers.
func (r *RedisServer) Start() {
	r.t.Helper()
	cmd := exec.Command(r.bin, append([]string{"--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--logfile", filepath.Join(r.dir, "redis.log")}, r.args...)...)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rdb.Close()
	WaitFor(r.t, "redis-server to answer", func() bool { return rdb.Ping(context.Background()).Err() == nil })
}

// Stop kills the server; it is safe to call when it is stopped already.
func (r *RedisServer) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// Signal sends sig to the running server (SIGSTOP and SIGCONT make a stall).
func (r *RedisServer) Signal(sig os.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return fmt.Errorf("redis-server is not running")
	}
	return r.cmd.Process.Signal(sig)
}
