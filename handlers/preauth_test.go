package handlers_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/store/storetest"
)

// metricOr0 is the value of an unlabelled metric of the server, 0 when the
// server has no such metric.
func metricOr0(t *testing.T, e *hookEnv, name string) float64 {
	t.Helper()
	v, _ := metricValue(t, e, name)
	return v
}

// raiseOpenFiles makes sure this process may hold n open files, raising its
// soft limit when it is lower (the hard one allowing).
func raiseOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Fatalf("the test needs %d open files; the hard limit is %d", n, lim.Max)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// idleUpload is a connection that sent a request head declaring a body and
// then nothing; answer is closed once the server answered it (or the
// connection ended), with what it read.
type idleUpload struct {
	from   string
	conn   net.Conn
	answer rawAnswer
	done   chan struct{}
}

// openIdleUploads opens n connections from the loopback address from, each
// sending head and no body, and reads each one's answer as it comes.
func openIdleUploads(t *testing.T, addr, from, head string, n int) []*idleUpload {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	out := make([]*idleUpload, 0, n)
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", from, err)
		}
		u := &idleUpload{from: from, conn: c, done: make(chan struct{})}
		out = append(out, u)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatalf("write a request head: %v", err)
		}
		go func() {
			defer close(u.done)
			u.answer = readRawAnswer(bufio.NewReader(c))
		}()
	}
	return out
}

func answered(ups []*idleUpload) int {
	n := 0
	for _, u := range ups {
		select {
		case <-u.done:
			n++
		default:
		}
	}
	return n
}

// 1,100 connections send the head of a Slack interaction declaring a 64 KiB
// body, and then nothing, as an attacker holding no signature would: 100
// from one address, then 1,000 from 100 others. Once each is either parked
// on its reservation or refused, authenticated writes on the same replica
// are answered 201: the idle bodies fill the budget of the routes taken
// before authentication (one address no more than its share of it) and
// leave the server's main body budget untouched.
func TestIdleBodiesBeforeAuthenticationLeaveWritesServed(t *testing.T) {
	t.Parallel()
	const (
		declared   = 64 << 10
		oneAddress = 100
		addresses  = 100 // besides the one
		perAddress = 10
		total      = oneAddress + addresses*perAddress // 1,100
	)
	raiseOpenFiles(t, 2*total+1024) // both ends of every connection are in this process
	// The body deadline outlasts the test: the idle uploads stay parked
	// until the test closes them.
	e := startEnv(t, storetest.Standalone(t), app.Config{BodyTimeout: 10 * time.Minute,
		SlackSigningSecret: "slack-signing-secret", SlackUsers: "U0ALICE=alice"})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	head := "POST /v1/channels/slack/interactions HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " + strconv.Itoa(declared) + "\r\n\r\n"

	var ups []*idleUpload
	defer func() {
		for _, u := range ups {
			u.conn.Close()
		}
		for _, u := range ups {
			<-u.done
		}
	}()
	// parked is how many uploads hold a reservation, of either budget.
	parked := func() int {
		held := metricOr0(t, e, "taskhook_http_body_bytes_reserved") +
			metricOr0(t, e, "taskhook_http_preauth_body_bytes_reserved")
		return int(held) / declared
	}
	settle := func(what string) {
		t.Helper()
		storetest.WaitFor(t, what, func() bool { return parked()+answered(ups) == len(ups) })
	}
	ups = append(ups, openIdleUploads(t, addr, "127.0.0.1", head, oneAddress)...)
	settle("the uploads from one address to be parked or refused")
	for i := range addresses {
		ups = append(ups, openIdleUploads(t, addr, fmt.Sprintf("127.0.1.%d", i+1), head, perAddress)...)
	}
	settle("every upload to be parked or refused")
	held := parked()
	t.Logf("%d idle uploads: %d parked, %d refused", total, held, answered(ups))

	ses := e.must(t, 201, e.do(t, "POST", "/v1/sessions", e.alice, map[string]any{}))
	e.must(t, 201, e.do(t, "POST", "/v1/tasks", e.alice, map[string]any{"sessionId": ses.str("sessionId")}))
	if now := parked(); now != held || answered(ups) != total-held {
		t.Fatalf("the attack let go during the writes: %d parked, then %d", held, now)
	}

	preauth := metricOr0(t, e, "taskhook_http_preauth_body_bytes_reserved")
	if main := metricOr0(t, e, "taskhook_http_body_bytes_reserved"); main != 0 {
		t.Errorf("the idle uploads hold %v bytes of the main budget", main)
	}
	if preauth != 8<<20 {
		t.Errorf("the idle uploads hold %v bytes of the pre-auth budget, want all of it (8 MiB)", preauth)
	}
	got := map[string]int{}
	for i, u := range ups {
		select {
		case <-u.done:
		default:
			continue
		}
		a := u.answer
		status := fmt.Sprintf("%d %s", a.status, a.code())
		got[status]++
		want := "503 overloaded"
		if i < oneAddress {
			want = "429 rate_limited"
		}
		if status != want || a.header.Get("Retry-After") != "1" || !a.closed {
			t.Errorf("an upload from %s: %v (Retry-After %q), want %s", u.from, a, a.header.Get("Retry-After"), want)
		}
	}
	t.Logf("refusals: %v", got)
	// One address holds its share, 2 MiB: 32 uploads of 64 KiB.
	if got["429 rate_limited"] != oneAddress-32 {
		t.Errorf("%d uploads from one address refused, want %d", got["429 rate_limited"], oneAddress-32)
	}

	for _, u := range ups {
		u.conn.Close()
	}
	storetest.WaitFor(t, "every body reservation to be released", func() bool { return parked() == 0 })
}
