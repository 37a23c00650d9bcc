package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// CancelWaitAnswer is the answer of a cancel with a wait: the cancel's, and
// which of the tasks it cancelled were not released by their executors when
// the wait ended (empty when all were).
type CancelWaitAnswer struct {
	CancelAnswer
	UnreleasedTaskIDs []string `json:"unreleasedTaskIds"`
}

// CancelAndWait is Cancel, then a wait of up to wait (counted from the
// request, at most tasks.MaxWait) until the executors have released every
// task the cancel ended. The wait is a replica-local waiter on the session:
// it reads the tasks once when the cancel is done, then only when a
// wake-up cannot tell (it carries no snapshot, or stands for several
// objects) and on the slow re-check. A task that expired meanwhile is not
// waited for.
func (s *Service) CancelAndWait(ctx context.Context, p authz.Principal, id, reason string, idem idem.Key,
	wait time.Duration) ([]byte, bool, error) {
	deadline := s.now().Add(min(wait, tasks.MaxWait))
	w := s.waiters.Wait(waits.WaitKey(waits.WakeSession, id))
	defer w.Stop()
	body, replayed, err := s.Cancel(ctx, p, id, reason, idem)
	if err != nil {
		return nil, false, err
	}
	var ans CancelAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, false, fmt.Errorf("decode the cancel's answer: %w", err)
	}
	part, _ := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
	unreleased, err := s.awaitReleased(ctx, w, part, ans.CancelledTaskIDs, deadline)
	if err != nil {
		return nil, false, err
	}
	out, err := json.Marshal(CancelWaitAnswer{CancelAnswer: ans, UnreleasedTaskIDs: unreleased})
	return out, replayed, err
}

// awaitReleased waits on w until every task of ids (of partition part) is
// released or the deadline passes, and answers those that are not, sorted.
func (s *Service) awaitReleased(ctx context.Context, w *waits.Waiter, part int, ids []string,
	deadline time.Time) ([]string, error) {
	pending := make(map[string]bool, len(ids))
	for _, id := range ids {
		pending[id] = true
	}
	reread := func() error {
		list := slices.Sorted(maps.Keys(pending))
		raws, err := s.store.TaskJSONs(ctx, part, list)
		if err != nil {
			return err
		}
		for i, raw := range raws {
			if raw == nil || released(raw) {
				delete(pending, list[i])
			}
		}
		return nil
	}
	if len(pending) > 0 {
		if err := reread(); err != nil {
			return nil, err
		}
	}
	for len(pending) > 0 {
		wk, why := w.Next(ctx, deadline)
		switch {
		case why == waits.Woken && wk.Merged, why == waits.Recheck:
			if err := reread(); err != nil {
				return nil, err
			}
		case why == waits.Woken:
			if wk.Kind != waits.WakeTask || !pending[wk.ID] {
				continue
			}
			// Released is for good: a snapshot older than one seen before
			// cannot undo it.
			if wk.Snapshot == nil {
				if err := reread(); err != nil {
					return nil, err
				}
			} else if released(wk.Snapshot) {
				delete(pending, wk.ID)
			}
		default:
			return slices.Sorted(maps.Keys(pending)), nil
		}
	}
	return []string{}, nil
}

// released reports whether a stored task says its executor released it.
func released(raw []byte) bool {
	var t struct {
		ReleasedAt *string `json:"releasedAt"`
	}
	return json.Unmarshal(raw, &t) == nil && t.ReleasedAt != nil
}
