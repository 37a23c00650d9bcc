package store_test

import (
	"context"
	"testing"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// A connection lost after Redis ran a script but before its answer arrived:
// the store sends the script again under the same command id, and the
// second run answers what the first did instead of applying the write again
// (or reading its own write as a lost race).
func TestLostReplyIsNotAppliedTwice(t *testing.T) {
	s, f, proxy := behindProxy(t)
	ctx := context.Background()

	proxy.CutAfterReply("evalsha")
	id, res := f.createTask(t, "alice", idem.Key{})
	if res.Outcome != store.OK {
		t.Fatalf("create with its reply lost: %+v, want ok", res)
	}
	proxy.CutAfterReply("evalsha")
	if r := f.apply(t, id, 1, idem.Key{}, `{"type":"task.message"}`); r.Outcome != store.OK {
		t.Fatalf("apply with its reply lost: %+v, want ok", r)
	}
	if proxy.Cuts() != 2 {
		t.Fatalf("%d connections cut, want 2", proxy.Cuts())
	}
	raw, err := s.GetJSON(ctx, s.Keys.Task(f.part, id))
	if err != nil || string(raw) != `{"rev":2}` {
		t.Fatalf("task: %s %v, want revision 2", raw, err)
	}
	log, err := s.ReadLog(ctx, f.taskLog(id), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 {
		t.Fatalf("task log holds %d events, want created and one message", len(log))
	}
}

// behindProxy is a store on a Redis of its own behind a proxy that can cut
// a connection after a reply, with alice's fixture on it.
func behindProxy(t *testing.T) (*store.Store, fixture, *storetest.Proxy) {
	t.Parallel()
	cfg, proxy := storetest.StandaloneBehindProxy(t)
	s := open(t, cfg)
	return s, newFixture(t, s, "alice"), proxy
}
