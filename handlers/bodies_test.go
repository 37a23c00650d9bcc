package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// rawAnswer is one answer read off a raw connection, and whether the
// server closed the connection after it.
type rawAnswer struct {
	status int
	header http.Header
	body   []byte
	closed bool
	err    error
}

func (a rawAnswer) code() string {
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a rawAnswer) String() string {
	return fmt.Sprintf("%d %s (closed %v, err %v)", a.status, a.body, a.closed, a.err)
}

// rawBound bounds every raw exchange: reaching it means the server kept a
// connection it should have answered or closed.
const rawBound = 30 * time.Second

// rawExchange sends a request head over a new connection, then has send
// (if any) write the body while the answer is read; send returns when stop
// is closed. It reads one answer and then waits for the server to close the
// connection.
func rawExchange(addr, head string, send func(c net.Conn, stop <-chan struct{})) rawAnswer {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(rawBound))
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		return rawAnswer{err: err}
	}
	stop, sent := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sent)
		if send != nil {
			send(c, stop)
		}
	}()
	a := readRawAnswer(bufio.NewReader(c))
	close(stop)
	c.Close() // ends a write the server no longer reads
	<-sent
	return a
}

func readRawAnswer(br *bufio.Reader) rawAnswer {
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return rawAnswer{err: err}
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	a := rawAnswer{status: res.StatusCode, header: res.Header, body: body, err: err}
	if err != nil {
		return a
	}
	_, err = br.ReadByte()
	if a.closed = errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET); !a.closed {
		a.err = fmt.Errorf("the connection stayed open: %v", err)
	}
	return a
}

// gauge is the value of an unlabelled metric of the server.
func gauge(t *testing.T, e *hookEnv, name string) float64 {
	t.Helper()
	v, ok := metricValue(t, e, name)
	if !ok {
		t.Fatalf("no %s in the metrics", name)
	}
	return v
}

// metricValue is the value of an unlabelled metric of the server, if it
// has one.
func metricValue(t *testing.T, e *hookEnv, name string) (float64, bool) {
	t.Helper()
	for _, line := range strings.Split(scrape(t, e), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f, true
		}
	}
	return 0, false
}

// Bodies of unknown length (chunked) are read as they come, up to the
// limit; a body declared above the limit is refused before it is sent; and
// every reservation of the body budget is given back.
func TestBodiesOfEveryLength(t *testing.T) {
	t.Parallel()
	e := startEnv(t, storetest.Embedded(t), app.Config{MaxBodyBytes: 64 << 10, MaxInflightBodyBytes: 64 << 10})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	post := func(body io.Reader) answer {
		t.Helper()
		req, err := http.NewRequest("POST", e.srv.URL+"/v1/sessions", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.alice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode, header: res.Header}
		a.raw, _ = io.ReadAll(res.Body)
		_ = json.Unmarshal(a.raw, &a.body)
		return a
	}
	// io.MultiReader hides the length: the client sends the body chunked.
	metadata := `{"metadata":{"x":"` + strings.Repeat("a", 60<<10) + `"}}`
	created := e.must(t, 201, post(io.MultiReader(strings.NewReader(metadata))))
	if len(created.str("metadata", "x")) != 60<<10 {
		t.Fatalf("the chunked body did not arrive whole: %d bytes of metadata", len(created.str("metadata", "x")))
	}
	wantError(t, post(io.MultiReader(strings.NewReader(metadata+strings.Repeat(" ", 8<<10)))), 413, "payload_too_large")
	a := rawExchange(addr, "POST /v1/sessions HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+e.alice+
		"\r\nContent-Length: 65537", nil)
	if a.status != 413 || a.code() != "payload_too_large" || !a.closed {
		t.Fatalf("a body declared above the limit: %v", a)
	}
	storetest.WaitFor(t, "every body reservation to be released", func() bool {
		return gauge(t, e, "taskhook_http_body_bytes_reserved") == 0
	})
}

// A replica that took posts for a hook closed through another replica learns
// it from the first refused post; from then on it refuses the hook's posts
// before their bodies are read.
func TestClosedHookLearnedOnAWarmReplica(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	a := startEnv(t, sc, app.Config{BodyTimeout: time.Minute})
	b := startEnv(t, sc, app.Config{})
	hook, token := a.hook(t, client.CreateHookInput{SessionID: a.session(t)})
	a.must(t, 202, a.post(t, token, "warm"))
	b.must(t, 200, b.do(t, "POST", "/v1/hooks/"+hook+"/close", b.alice, nil))
	wantError(t, a.post(t, token, "late"), 410, "hook_closed")
	addr := strings.TrimPrefix(a.srv.URL, "http://")
	late := rawExchange(addr, "POST /v1/callback/"+token+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Length: 1000", nil)
	if late.status != 410 || late.code() != "hook_closed" || !late.closed {
		t.Fatalf("a post to the hook now known closed: %v", late)
	}
}

// trickleBody sends prefix, then one byte every 100ms until stopped.
func trickleBody(prefix string) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, stop <-chan struct{}) {
		if _, err := io.WriteString(c, prefix); err != nil {
			return
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}
}

// stallBody sends n bytes of a JSON string at once, then nothing more.
func stallBody(n int) func(net.Conn, <-chan struct{}) {
	return func(c net.Conn, stop <-chan struct{}) {
		if _, err := c.Write(append([]byte(`{"metadata":{"x":"`), bytes.Repeat([]byte("a"), n)...)); err != nil {
			return
		}
		<-stop
	}
}

// rssBytes is the resident set of process pid.
func rssBytes(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in the status of process %d", pid)
}

// tokenOf is the capability token at the end of a URL.
func tokenOf(u string) string { return u[strings.LastIndexByte(u, '/')+1:] }

// fakeToken is a token of the right shape that names nothing: real's last
// characters replaced by i.
func fakeToken(real string, i int) string { return real[:len(real)-4] + fmt.Sprintf("%04d", i) }

// Hundreds of uploads that trickle or stall, to the capability routes and
// to a route behind a bearer token, while a long-poll and an event stream
// are open: unknown and dead tokens (and a missing bearer token) are
// answered before any body byte is sent, the uploads to live routes are cut
// at the body deadline (408) or refused when the body budget is full (503),
// every connection is closed, the server's memory stays within 100 MB of
// idle, and the long-poll and the stream outlive the deadline and are
// served normally afterwards. The server runs as its own process so its
// resident memory can be read.
func TestSlowBodiesHoldNeitherConnectionsNorMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	t.Parallel()
	sc := storetest.Standalone(t)
	const deadline = 2 * time.Second
	proc, procURL := apptest.StartProcess(t, sc,
		"TASKHOOK_BODY_TIMEOUT="+deadline.String(), "TASKHOOK_MAX_INFLIGHT_BODY_BYTES="+strconv.Itoa(16<<20))
	p := envOf(t, &apptest.Server{URL: procURL})
	other := startEnv(t, sc, app.Config{}) // a second replica, on the same store
	addr := strings.TrimPrefix(procURL, "http://")

	// What the uploads go to: a live task, a hook closed through the other
	// replica (the process has never seen it), and an answer URL already
	// used (its task still waits for another answer).
	ses := p.session(t)
	task := p.task(t, ses)
	asked := p.must(t, 200, p.do(t, "POST", "/v1/tasks/"+task+"/input-requests", p.alice, map[string]any{
		"requests": []map[string]any{{"requestId": "used", "prompt": "Ok?", "display": "confirmation"},
			{"requestId": "open", "prompt": "Ok?", "display": "confirmation"}}}))
	usedAnswer := tokenOf(asked.str("inputRequests", "0", "answerUrl"))
	p.must(t, 200, p.do(t, "POST", "/v1/input/"+usedAnswer, "", map[string]any{"optionId": "yes"}))
	closedHook, closedToken := other.hook(t, client.CreateHookInput{SessionID: other.session(t)})
	other.must(t, 200, other.do(t, "POST", "/v1/hooks/"+closedHook+"/close", other.alice, nil))

	// A long-poll and an event stream, both waiting on the process.
	watched := p.session(t)
	polledTask := p.task(t, watched)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	polled := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", procURL+"/v1/tasks/"+polledTask+"?afterRevision=1&wait=60s", nil)
		req.Header.Set("Authorization", "Bearer "+p.alice)
		res, err := hc.Do(req)
		if err != nil {
			polled <- answer{raw: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode}
		a.raw, _ = io.ReadAll(res.Body)
		_ = json.Unmarshal(a.raw, &a.body)
		polled <- a
	}()
	streamCtx, stopStream := context.WithCancel(context.Background())
	defer stopStream()
	lines, streamEnded := make(chan string, 64), make(chan struct{})
	go func() {
		defer close(streamEnded)
		req, _ := http.NewRequestWithContext(streamCtx, "GET", procURL+"/v1/sessions/"+watched+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+p.alice)
		req.Header.Set("Accept", "text/event-stream")
		res, err := hc.Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		scan := bufio.NewScanner(res.Body)
		for scan.Scan() {
			select {
			case lines <- scan.Text():
			case <-streamCtx.Done():
				return
			}
		}
	}()
	storetest.WaitFor(t, "the long-poll and the stream to wait", func() bool {
		return strings.Contains(scrape(t, p), "taskhook_waiters 2")
	})

	idle, err := rssBytes(proc.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	sampled, stopSampling := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := rssBytes(proc.Process.Pid); err == nil && rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	bearer := "Authorization: Bearer " + p.alice
	type upload struct {
		group string
		head  string
		send  func(net.Conn, <-chan struct{})
		want  []string // status and code, any of
	}
	var uploads []upload
	add := func(n int, group string, head func(i int) string, send func(net.Conn, <-chan struct{}), want ...string) {
		for i := range n {
			uploads = append(uploads, upload{group, head(i), send, want})
		}
	}
	post := func(path string, headers ...string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n" + strings.Join(headers, "\r\n")
	}
	const declared = "Content-Length: 1048576"
	const chunked = "Transfer-Encoding: chunked"
	// Answered from the path or the headers: no body byte is ever sent.
	add(100, "unknown hook token", func(i int) string {
		return post("/v1/callback/"+fakeToken(closedToken, i), declared)
	}, nil, "404 not_found")
	add(100, "unknown answer token", func(i int) string {
		return post("/v1/input/"+fakeToken(usedAnswer, i), chunked)
	}, nil, "404 not_found")
	add(20, "closed hook", func(int) string { return post("/v1/callback/"+closedToken, declared) }, nil, "410 hook_closed")
	add(20, "used answer URL", func(int) string { return post("/v1/input/"+usedAnswer, chunked) }, nil, "410 input_closed")
	add(60, "no bearer token", func(int) string { return post("/v1/tasks", declared) }, nil, "401 unauthorized")
	// Live routes: cut at the deadline. The budget (16 MiB) takes 16 of the
	// stalled uploads (declared just under 1 MB each), leaving room for all
	// the trickling ones; the other stalled uploads are refused with 503.
	add(50, "trickle", func(int) string {
		return post("/v1/tasks/"+task+"/messages", bearer, "Content-Length: 4096")
	}, trickleBody(`{"text":"`), "408 request_timeout")
	add(150, "stall", func(int) string { return post("/v1/sessions", bearer, "Content-Length: 1000000") },
		stallBody(768<<10), "408 request_timeout", "503 overloaded")

	answers := make([]rawAnswer, len(uploads))
	var wg sync.WaitGroup
	start := func(first bool) {
		for i, u := range uploads {
			if (u.group == "trickle") == first {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[i] = rawExchange(addr, u.head, u.send)
				}()
			}
		}
	}
	// The trickling uploads first: the budget serves waiters in order, and
	// a stalled upload waiting for a megabyte would hold them back.
	start(true)
	storetest.WaitFor(t, "the trickling uploads to reserve their bodies", func() bool {
		return gauge(t, p, "taskhook_http_body_bytes_reserved") == 50*4096
	})
	start(false)
	wg.Wait()
	close(stopSampling)
	<-sampled

	got := map[string]map[string]int{}
	for i, a := range answers {
		u := uploads[i]
		status := fmt.Sprintf("%d %s", a.status, a.code())
		if got[u.group] == nil {
			got[u.group] = map[string]int{}
		}
		got[u.group][status]++
		switch {
		case a.err != nil || !a.closed:
			t.Errorf("%s: %v", u.group, a)
		case !strings.Contains(strings.Join(u.want, ","), status):
			t.Errorf("%s: got %v, want %v", u.group, a, u.want)
		case !strings.HasPrefix(a.header.Get("X-Request-Id"), "rq_"):
			t.Errorf("%s: no X-Request-Id: %v", u.group, a.header)
		case a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") == "":
			t.Errorf("%s: a 503 without Retry-After", u.group)
		}
	}
	t.Logf("%d uploads: %v", len(uploads), got)
	storetest.WaitFor(t, "every body reservation to be released", func() bool {
		return gauge(t, p, "taskhook_http_body_bytes_reserved") == 0
	})
	if got["stall"]["503 overloaded"] == 0 {
		t.Errorf("no stalled upload was refused for want of budget: %v", got["stall"])
	}
	t.Logf("server RSS: idle %d MiB, peak %d MiB", idle>>20, peak.Load()>>20)
	if grown := peak.Load() - idle; grown > 100<<20 {
		t.Errorf("the server's RSS grew by %d MiB under the uploads, want at most 100", grown>>20)
	}

	// The deadline has passed for every upload; the long-poll and the
	// stream opened before them are still there, and are served as usual.
	select {
	case a := <-polled:
		t.Fatalf("the long-poll ended during the uploads: %d %s", a.status, a.raw)
	default:
	}
	select {
	case <-streamEnded:
		t.Fatal("the event stream ended during the uploads")
	default:
	}
	p.must(t, 200, p.do(t, "POST", "/v1/tasks/"+polledTask+"/progress", p.alice, map[string]any{"statusMessage": "on"}))
	select {
	case a := <-polled:
		if a.status != 200 || a.get("revision") != float64(2) {
			t.Fatalf("the long-poll answered %d %s, want revision 2", a.status, a.raw)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the long-poll was not woken by the progress")
	}
	timeout := time.After(15 * time.Second)
	for progressed := false; !progressed; {
		select {
		case line := <-lines:
			progressed = line == "event: task.progress"
		case <-streamEnded:
			t.Fatal("the event stream ended before the progress event")
		case <-timeout:
			t.Fatal("the event stream did not carry the progress event")
		}
	}
	stopStream()
	<-streamEnded
}
