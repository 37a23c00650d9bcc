// Package apptest starts real servers for black-box tests: the real app on a
// loopback port, driven over HTTP through package client.
package apptest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// Secret is the HS256 secret of test servers.
const Secret = "test-secret-0123456789abcdef-0123456789"

// Server is one running app.
type Server struct {
	App   *app.App
	URL   string
	Logs  *SafeBuffer
	Store store.Config // the store it runs on
}

// SafeBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SafeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SafeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SafeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs a server on the given store config. Fields of cfg left zero get
// test defaults (loopback port, the test secret); it stops when the test ends.
func Start(t testing.TB, sc store.Config, cfg app.Config) *Server {
	t.Helper()
	if cfg.Addr != "" {
		return start(t, sc, cfg)
	}
	// The port was free a moment ago; a test running beside this one may
	// take it in between, so a taken one is given up for another.
	for try := 1; ; try++ {
		c := cfg
		c.Addr = freeAddr(t)
		if c.PublicURL == "" {
			c.PublicURL = "http://" + c.Addr // hook URLs point at this server
		}
		if s, err := tryStart(t, sc, c); err == nil {
			return s
		} else if !errors.Is(err, syscall.EADDRINUSE) || try == 5 {
			t.Fatalf("app.Start: %v", err)
		}
	}
}

// start runs a server on cfg.Addr.
func start(t testing.TB, sc store.Config, cfg app.Config) *Server {
	t.Helper()
	s, err := tryStart(t, sc, cfg)
	if err != nil {
		t.Fatalf("app.Start: %v", err)
	}
	return s
}

// tryStart builds and starts a server; a server that did not start is
// stopped again (its store closed) before the error is returned.
func tryStart(t testing.TB, sc store.Config, cfg app.Config) (*Server, error) {
	t.Helper()
	if cfg.JWTSecret == "" && cfg.JWKSFile == "" {
		cfg.JWTSecret = Secret
	}
	cfg.RedisURL, cfg.RedisCluster, cfg.RedisPrefix, cfg.Partitions = sc.URL, sc.Cluster, sc.Prefix, sc.Partitions
	if cfg.ListRate == 0 {
		cfg.ListRate = -1 // tests that poll lists are not limited; limits are tested on their own
	}
	if cfg.RedisTimeout == 0 {
		cfg.RedisTimeout = sc.Timeout
	}
	logs := &SafeBuffer{}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, logs)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		_ = a.Stop(ctx)
		return nil, err
	}
	s := &Server{App: a, URL: "http://" + a.Addr(), Logs: logs, Store: sc}
	t.Cleanup(func() { s.Stop(t) })
	return s, nil
}

// EachBackend runs fn, on every store backend as storetest.EachBackend
// does, against a server started with cfg.
func EachBackend(t *testing.T, cfg app.Config, fn func(t *testing.T, srv *Server)) {
	t.Helper()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) { fn(t, Start(t, sc, cfg)) })
}

// freeAddr is a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Stop drains the server (it is safe to call twice).
func (s *Server) Stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.App.Stop(ctx); err != nil {
		t.Logf("stop: %v", err)
	}
}

// Stored is every key the server keeps under its store's prefix, with what
// it holds as text (storetest.Dump): for tests that check what Redis keeps.
func (s *Server) Stored(t testing.TB) map[string]string {
	t.Helper()
	return storetest.Dump(t, s.App.Store.RDB, s.Store.Prefix)
}

// Token is a valid bearer token for subject.
func Token(t testing.TB, subject string, scopes ...string) string {
	t.Helper()
	return TokenActingFor(t, subject, nil, scopes...)
}

// TokenActingFor is a valid bearer token for subject whose act_for claim
// lists the principals it may name as a task's requester.
func TokenActingFor(t testing.TB, subject string, actFor []string, scopes ...string) string {
	t.Helper()
	tok, err := authz.IssueDevTokenActingFor([]byte(Secret), subject, scopes, actFor, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Client is a client of the server with a token of subject.
func (s *Server) Client(t testing.TB, subject string, opts ...client.Option) *client.Client {
	t.Helper()
	return client.New(s.URL, Token(t, subject), opts...)
}

// ClientActingFor is a client of the server whose token of subject may name
// the principals actFor as its tasks' requesters.
func (s *Server) ClientActingFor(t testing.TB, subject string, actFor []string, opts ...client.Option) *client.Client {
	t.Helper()
	return client.New(s.URL, TokenActingFor(t, subject, actFor), opts...)
}

// Fetch sends req with hc and reads the whole answer, or fails the test:
// for what a test sends by hand, past the client.
func Fetch(t testing.TB, hc *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// Session opens a session as cl, or fails the test.
func Session(t testing.TB, ctx context.Context, cl *client.Client) *client.Session {
	t.Helper()
	return openSession(t, ctx, cl, client.CreateSessionInput{})
}

// openSession opens the session in as cl, or fails the test.
func openSession(t testing.TB, ctx context.Context, cl *client.Client, in client.CreateSessionInput) *client.Session {
	t.Helper()
	ses, err := cl.CreateSession(ctx, in)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return ses
}

// SessionWithTask opens a session as cl and starts the task in it (in's
// SessionID is the new session's), or fails the test.
func SessionWithTask(t testing.TB, ctx context.Context, cl *client.Client, in client.CreateTaskInput) (*client.Session, *client.Task) {
	t.Helper()
	return sessionWithTask(t, ctx, cl, client.CreateSessionInput{}, in)
}

// NotifyingSessionWithTask opens a session as cl whose notifications go to
// notify and starts a task in it, or fails the test.
func NotifyingSessionWithTask(t testing.TB, ctx context.Context, cl *client.Client, notify []client.EndpointRequest) (*client.Session, *client.Task) {
	t.Helper()
	return sessionWithTask(t, ctx, cl, client.CreateSessionInput{Notify: notify}, client.CreateTaskInput{})
}

// sessionWithTask opens the session ses as cl and starts the task in in it,
// or fails the test.
func sessionWithTask(t testing.TB, ctx context.Context, cl *client.Client, ses client.CreateSessionInput, in client.CreateTaskInput) (*client.Session, *client.Task) {
	t.Helper()
	opened := openSession(t, ctx, cl, ses)
	in.SessionID = opened.SessionID
	task, err := cl.CreateTask(ctx, in)
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	return opened, task
}

// StartTasks starts n tasks in the session as cl, or fails the test; it
// returns their ids, in the order they started.
func StartTasks(t testing.TB, ctx context.Context, cl *client.Client, sessionID string, n int) []string {
	t.Helper()
	return StartTasksLike(t, ctx, cl, client.CreateTaskInput{SessionID: sessionID}, n)
}

// StartTasksLike starts n tasks as cl, each from in (its SessionID says
// where), or fails the test; it returns their ids, in the order they started.
func StartTasksLike(t testing.TB, ctx context.Context, cl *client.Client, in client.CreateTaskInput, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for range n {
		task, err := cl.CreateTask(ctx, in)
		if err != nil {
			t.Fatalf("CreateTask: %v", err)
		}
		ids = append(ids, task.TaskID)
	}
	return ids
}

// Embedded starts a server with cfg on an embedded store of its own
// (storetest.Embedded).
func Embedded(t testing.TB, cfg app.Config) *Server {
	t.Helper()
	return Start(t, storetest.Embedded(t), cfg)
}

// Standalone starts a server with cfg on a standalone Redis store of its own
// (storetest.Standalone).
func Standalone(t testing.TB, cfg app.Config) *Server {
	t.Helper()
	return Start(t, storetest.Standalone(t), cfg)
}

// BehindProxy starts a server with cfg on a standalone Redis store of its
// own whose traffic goes through a proxy that counts it
// (storetest.StandaloneBehindProxy).
func BehindProxy(t testing.TB, cfg app.Config) (*Server, *storetest.Proxy) {
	t.Helper()
	sc, proxy := storetest.StandaloneBehindProxy(t)
	return Start(t, sc, cfg), proxy
}

// Replicas starts n servers with cfg on one standalone Redis store of their
// own: replicas of one deployment.
func Replicas(t testing.TB, n int, cfg app.Config) []*Server {
	t.Helper()
	sc := storetest.Standalone(t)
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = Start(t, sc, cfg)
	}
	return servers
}
