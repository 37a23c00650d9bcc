package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// putTool publishes (or replaces) a tool as executor, read first as the
// service does, open to everyone or to callers.
func putTool(t *testing.T, s *store.Store, name, executor string, created int64, open bool, callers ...string) store.ToolResult {
	t.Helper()
	ctx := context.Background()
	was, err := s.ReadToolState(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if was.Executor != "" {
		created = was.Created
	}
	res, err := s.PutTool(ctx, store.ToolPut{
		Name: name, Executor: executor, Was: was, Open: open, Indexed: append(callers, executor), Created: created,
		JSON:      fmt.Appendf(nil, `{"name":%q,"executor":%q,"callers":%q}`, name, executor, callers),
		Endpoints: store.NewEndpoints{List: []byte(`[{"endpointId":"ep_1","url":"https://x.example","kinds":["task.created"],"status":"active"}]`), Secrets: []string{"ep_1", "sealed-1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func toolNames(t *testing.T, s *store.Store, principal string) []string {
	t.Helper()
	recs, next, err := s.ListTools(context.Background(), principal, nil, 100)
	if err != nil || next != "" {
		t.Fatalf("ListTools(%s): next %q, %v", principal, next, err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, string(r.JSON[9:12]))
	}
	return names
}

// A tool's name is its publisher's until it deletes it; who may see it is
// its executor and the callers it names (or everyone), in reads and lists
// alike; a replace moves it between the indexes, a delete takes it out of
// all of them.
func TestToolsPutReadListDelete(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := storetest.Open(t, cfg, metrics.New())
		ctx := context.Background()

		if r := putTool(t, s, "aaa", "pub", 1000, false, "bob"); r.Outcome != store.OK || !r.Created || r.Revision != 1 {
			t.Fatalf("first put: %+v", r)
		}
		if r := putTool(t, s, "bbb", "pub", 2000, true); r.Outcome != store.OK || !r.Created {
			t.Fatalf("open put: %+v", r)
		}
		if r := putTool(t, s, "aaa", "mallory", 3000, true); r.Outcome != store.NameTaken {
			t.Fatalf("another principal's name: %+v", r)
		}
		for who, want := range map[string][]string{"pub": {"bbb", "aaa"}, "bob": {"bbb", "aaa"}, "carol": {"bbb"}} {
			if got := toolNames(t, s, who); !slices.Equal(got, want) {
				t.Errorf("%s lists %v, want %v", who, got, want)
			}
		}
		rec, err := s.ToolFor(ctx, "aaa", "bob", true)
		if err != nil || rec.Executor != "pub" || rec.Revision != 1 || rec.Created != 1000 || !slices.Equal(rec.Secrets, []string{"ep_1", "sealed-1"}) {
			t.Fatalf("bob reads %+v, %v", rec, err)
		}
		if _, err := s.ToolFor(ctx, "aaa", "carol", false); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("carol reads a tool she may not call: %v", err)
		}

		// Replaced: now open to carol, no more to bob; the creation time stays.
		if r := putTool(t, s, "aaa", "pub", 9000, false, "carol"); r.Outcome != store.OK || r.Created || r.Revision != 2 {
			t.Fatalf("replace: %+v", r)
		}
		if got := toolNames(t, s, "bob"); !slices.Equal(got, []string{"bbb"}) {
			t.Errorf("bob lists %v after the replace", got)
		}
		if got := toolNames(t, s, "carol"); !slices.Equal(got, []string{"bbb", "aaa"}) {
			t.Errorf("carol lists %v after the replace", got)
		}

		// A put or delete from a state read before a change is refused.
		stale, err := s.ReadToolState(ctx, "aaa")
		if err != nil {
			t.Fatal(err)
		}
		putTool(t, s, "aaa", "pub", 0, true)
		if r, err := s.DeleteTool(ctx, "aaa", "pub", stale); err != nil || r.Outcome != store.Conflict {
			t.Fatalf("delete from a stale read: %+v, %v", r, err)
		}

		now, err := s.ReadToolState(ctx, "aaa")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := s.DeleteTool(ctx, "aaa", "mallory", now); err != nil || r.Outcome != store.Missing {
			t.Fatalf("delete by another principal: %+v, %v", r, err)
		}
		r, err := s.DeleteTool(ctx, "aaa", "pub", now)
		if err != nil || r.Outcome != store.OK || len(r.Deleted.JSON) == 0 || len(r.Deleted.Endpoints) == 0 {
			t.Fatalf("delete: %+v, %v", r, err)
		}
		for _, who := range []string{"pub", "bob", "carol"} {
			if got := toolNames(t, s, who); !slices.Equal(got, []string{"bbb"}) {
				t.Errorf("%s lists %v after the delete", who, got)
			}
		}
		if _, err := s.ToolFor(ctx, "aaa", "pub", false); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a deleted tool reads: %v", err)
		}
		// The name is free again.
		if r := putTool(t, s, "aaa", "mallory", 5000, true); r.Outcome != store.OK || !r.Created || r.Revision != 1 {
			t.Fatalf("put after the delete: %+v", r)
		}
	})
}
