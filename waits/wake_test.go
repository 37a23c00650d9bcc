package waits_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/waits"
)

// Wakes a waiter has not read yet are coalesced: one wake stands for all of
// them, the newest revision of a task winning whatever order they came in.
func TestWaitersCoalescePendingWakes(t *testing.T) {
	reg, _ := registry(waits.Config{})
	// coalesced is what a waiter on key reads once the wakes came.
	coalesced := func(t *testing.T, key string, wakes ...waits.Wake) waits.Wake {
		t.Helper()
		w := reg.Wait(key)
		defer w.Stop()
		for _, wk := range wakes {
			reg.Notify(wk)
		}
		wk, why := w.Next(context.Background(), time.Now().Add(time.Second))
		if why != waits.Woken {
			t.Fatalf("no wake: %v", why)
		}
		return wk
	}
	task := func(id string, rev int64, types ...string) waits.Wake {
		return waits.Wake{Kind: waits.WakeTask, ID: id, SessionID: "ses_1", Revision: rev,
			Snapshot: fmt.Appendf(nil, `{"revision":%d}`, rev), Types: types}
	}

	t.Run("a late older wake of the task does not hide a newer one", func(t *testing.T) {
		wk := coalesced(t, waits.WaitKey(waits.WakeTask, "task_a"),
			task("task_a", 6, "task.progress"),
			task("task_a", 5, "task.message"))
		if wk.Revision != 6 || string(wk.Snapshot) != `{"revision":6}` || wk.First != 5 || wk.Merged {
			t.Errorf("coalesced wake: %+v", wk)
		}
		if !slices.Equal(wk.Types, []string{"task.message", "task.progress"}) && !slices.Equal(wk.Types, []string{"task.progress", "task.message"}) {
			t.Errorf("coalesced types %q, want both", wk.Types)
		}
		if !wk.FollowsOn(4) || wk.FollowsOn(3) {
			t.Errorf("a wake for revisions 5 to 6 follows on 4 and not on 3: %v %v", wk.FollowsOn(4), wk.FollowsOn(3))
		}
	})
	t.Run("wakes of several tasks of a session", func(t *testing.T) {
		wk := coalesced(t, waits.WaitKey(waits.WakeSession, "ses_1"),
			task("task_a", 2, "task.message"),
			task("task_b", 3, "task.progress"))
		if wk.ID != "task_b" || !wk.Merged || !slices.Contains(wk.Types, "task.message") || !slices.Contains(wk.Types, "task.progress") {
			t.Errorf("coalesced wake: %+v", wk)
		}
		if (waits.Kinds{"task.message"}).MayConcern(wk) != true || wk.FollowsOn(2) {
			t.Errorf("a merged wake concerns the types of both and follows on nothing")
		}
	})
	t.Run("a gap between two wakes of the task makes the types unknown", func(t *testing.T) {
		wk := coalesced(t, waits.WaitKey(waits.WakeTask, "task_d"),
			task("task_d", 5, "task.progress"),
			task("task_d", 7, "task.progress"))
		if wk.Revision != 7 || wk.First != 5 || wk.Types != nil || wk.FollowsOn(4) {
			t.Errorf("coalesced wake over a gap: %+v", wk)
		}
	})
	t.Run("unknown types stay unknown", func(t *testing.T) {
		wk := coalesced(t, waits.WaitKey(waits.WakeTask, "task_c"),
			task("task_c", 2, "task.progress"),
			waits.Wake{Kind: waits.WakeTask, ID: "task_c", Revision: 3})
		if wk.Types != nil || !(waits.Kinds{"task.message"}).MayConcern(wk) {
			t.Errorf("coalesced wake with unknown types: %+v", wk)
		}
	})
}
