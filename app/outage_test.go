package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// ownRedis is a throwaway redis-server that this test starts and stops.
type ownRedis struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func startOwnRedis(t *testing.T) *ownRedis {
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
	r := &ownRedis{t: t, port: port, dir: t.TempDir()}
	r.start(bin)
	t.Cleanup(r.stop)
	return r
}

func (r *ownRedis) start(bin string) {
	r.t.Helper()
	// Durable on every write, so a restart shows exactly what was applied.
	r.cmd = exec.Command(bin, "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer rdb.Close()
	storetest.WaitFor(r.t, "the condition", func() bool { return rdb.Ping(context.Background()).Err() == nil })
}

func (r *ownRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func (r *ownRedis) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

func TestRedisOutage(t *testing.T) {
	t.Parallel()
	rs := startOwnRedis(t)
	srv := apptest.Start(t, store.Config{URL: "redis://" + rs.addr() + "/0", Prefix: "outage:"}, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "ops")
	ses, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	bin := rs.cmd.Path
	rs.stop()

	// Every store-backed answer is a 503 store_unavailable with Retry-After,
	// well before the 5 s bound; readiness follows.
	for _, call := range []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("during")})
			return err
		},
		func(ctx context.Context) error { _, err := cl.GetTask(ctx, task.TaskID); return err },
		func(ctx context.Context) error {
			_, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
			return err
		},
		func(ctx context.Context) error { return cl.Ready(ctx) },
	} {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := call(cctx)
		cancel()
		var e *client.Error
		if !asError(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != client.CodeStoreUnavailable || e.RetryAfter <= 0 {
			t.Fatalf("with Redis down: %v, want 503 store_unavailable with Retry-After within 5s", err)
		}
	}

	rs.start(bin)
	storetest.WaitFor(t, "the condition", func() bool { return cl.Ready(ctx) == nil })
	got, err := cl.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing half-applied: the task and its log agree.
	events, err := cl.TaskEvents(ctx, task.TaskID, client.EventsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if last := events.Events[len(events.Events)-1]; last.Revision != got.Revision {
		t.Fatalf("task at revision %d, its log ends at %d", got.Revision, last.Revision)
	}
	// The same process serves again, scripts and wake-ups included.
	done := make(chan *client.Task, 1)
	go func() {
		tk, _ := cl.WaitTask(ctx, task.TaskID, got.Revision, 20*time.Second)
		done <- tk
	}()
	if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String("after")}); err != nil {
		t.Fatal(err)
	}
	if tk := <-done; tk == nil || tk.Revision != got.Revision+1 {
		t.Fatalf("long-poll after recovery: %+v", tk)
	}
}
