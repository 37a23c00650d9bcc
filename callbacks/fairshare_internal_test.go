package callbacks

import (
	"fmt"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/store"
)

// testJob is a job of size bytes to endpoint ep of owner on host; slack
// makes it a Slack endpoint's.
func testJob(ep, owner, host string, size int, slack bool) *job {
	j := &job{entry: store.OutboxEntry{ID: fmt.Sprintf("%s-%s", ep, owner), EndpointID: ep}, owner: owner, host: host, size: size}
	if slack {
		j.ep.Slack = &wire.SlackTarget{Channel: "C1"}
	}
	return j
}

// placed says what place decided, as one word.
func placed(s *shares, j *job) string {
	start, wait, full := s.place(j)
	switch {
	case start:
		return "start"
	case wait:
		return "wait:" + full
	}
	return "none:" + full
}

// Each share holds back what is over its limit, names itself, and a job
// that waits starts when the share it waits for has room again; a job
// queued behind its endpoint's waiting jobs does not pass them.
func TestSharesHoldBackWhatIsOverEachLimit(t *testing.T) {
	s := newShares(shareLimits{endpoint: 2, owner: 3, host: 4, waitBytes: 1 << 20})
	steps := []struct {
		j    *job
		want string
	}{
		{testJob("e1", "a", "h1", 1, false), "start"},
		{testJob("e1", "a", "h1", 1, false), "start"},
		{testJob("e1", "a", "h1", 1, false), "wait:endpoint"}, // e1 has 2
		{testJob("e2", "a", "h1", 1, false), "start"},
		{testJob("e3", "a", "h2", 1, false), "wait:owner"}, // a has 3
		{testJob("e4", "b", "h1", 1, false), "start"},
		{testJob("e5", "c", "h1", 1, false), "wait:host"}, // h1 has 4
		{testJob("e6", "c", "h2", 1, true), "start"},
		{testJob("e6", "c", "h2", 1, true), "wait:endpoint"}, // a Slack endpoint's go one at a time
	}
	var started []*job
	for i, st := range steps {
		if got := placed(s, st.j); got != st.want {
			t.Fatalf("step %d (%s of %s on %s): %s, want %s", i, st.j.entry.EndpointID, st.j.owner, st.j.host, got, st.want)
		}
		if st.want == "start" {
			started = append(started, st.j)
		}
	}
	if j := s.next(); j != nil {
		t.Fatalf("%s started with every share it waits for full", j.entry.EndpointID)
	}
	if s.waiting != 4 {
		t.Fatalf("%d waiting, want 4", s.waiting)
	}

	// A job of e1 waits: a new one of e1 queues behind it even with room.
	s.done(started[0]) // e1, a, h1
	if got := placed(s, testJob("e1", "a", "h1", 1, false)); got != "wait:endpoint" {
		t.Fatalf("a new job of an endpoint with waiting jobs: %s, want to wait behind them", got)
	}
	if j := s.next(); j == nil || j.entry.EndpointID != "e1" {
		t.Fatalf("after an e1 job ended, %v started, want e1's first waiting job", j)
	}
	if j := s.next(); j != nil {
		t.Fatalf("%s started with no share freed", j.entry.EndpointID)
	}
	// b's job ends: h1 has room, and c's e5 (waiting for h1) starts.
	s.done(started[3])
	if j := s.next(); j == nil || j.entry.EndpointID != "e5" {
		t.Fatalf("after a job on h1 ended, %v started, want e5", j)
	}
}

// The waiting room holds waitBytes in all and a quarter of it for one owner
// or one host; what does not fit is neither started nor kept.
func TestSharesBoundTheWaitingRoom(t *testing.T) {
	s := newShares(shareLimits{endpoint: 1, owner: 100, host: 100, waitBytes: 400})
	if got := placed(s, testJob("busy", "a", "h0", 10, false)); got != "start" {
		t.Fatalf("the first job: %s", got)
	}
	// Owner a fills its quarter (100 bytes) on endpoint busy.
	for i := range 10 {
		if got := placed(s, testJob("busy", "a", fmt.Sprintf("h%d", i), 10, false)); got != "wait:endpoint" {
			t.Fatalf("job %d of a: %s, want to wait", i, got)
		}
	}
	if got := placed(s, testJob("busy", "a", "h9", 10, false)); got != "none:endpoint" {
		t.Fatalf("a's job past its quarter: %s, want none", got)
	}
	// Other owners on one host fill the host's quarter, then the room.
	hold := func(ep, owner, host string) string {
		if got := placed(s, testJob(ep, owner, host, 1, false)); got != "start" {
			t.Fatalf("%s's first job: %s", ep, got)
		}
		return placed(s, testJob(ep, owner, host, 100, false))
	}
	if got := hold("x1", "b", "hx"); got != "wait:endpoint" {
		t.Fatalf("b's job: %s", got)
	}
	if got := hold("x2", "c", "hx"); got != "none:endpoint" {
		t.Fatalf("c's job on a host past its quarter: %s, want none", got)
	}
	if got := hold("y1", "d", "hy"); got != "wait:endpoint" {
		t.Fatalf("d's job: %s", got)
	}
	if got := hold("z1", "e", "hz"); got != "wait:endpoint" {
		t.Fatalf("e's job: %s", got)
	}
	if got := hold("w1", "f", "hw"); got != "none:endpoint" {
		t.Fatalf("a job past the whole room (%d of %d bytes): %s, want none", s.bytes, s.limits.waitBytes, got)
	}
	if n := len(s.clear()); n != 13 || s.waiting != 0 || s.bytes != 0 || len(s.byOwner) != 0 || len(s.byHost) != 0 {
		t.Fatalf("clear returned %d jobs and left %d waiting, %d bytes, %v, %v", n, s.waiting, s.bytes, s.byOwner, s.byHost)
	}
}

// Endpoints with waiting jobs take turns: one endpoint's many queued jobs
// do not keep another endpoint's from starting when the share they wait
// for (here their host's, one delivery) has room again.
func TestSharesTakeTurns(t *testing.T) {
	s := newShares(shareLimits{endpoint: 100, owner: 100, host: 1, waitBytes: 1 << 20})
	running := testJob("e1", "a", "h", 1, false)
	if got := placed(s, running); got != "start" {
		t.Fatalf("the first job: %s", got)
	}
	for range 5 {
		placed(s, testJob("e1", "a", "h", 1, false))
	}
	placed(s, testJob("e2", "b", "h", 1, false))
	var order []string
	for range 4 {
		s.done(running)
		if running = s.next(); running == nil {
			t.Fatalf("nothing started after %v", order)
		}
		order = append(order, running.entry.EndpointID)
		if j := s.next(); j != nil {
			t.Fatalf("%s started past the host's share", j.entry.EndpointID)
		}
	}
	if want := []string{"e1", "e2", "e1", "e1"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("started in the order %v, want %v", order, want)
	}
}
