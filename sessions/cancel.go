package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// CancelAnswer is the answer of a cancel: the session and the tasks it ended.
type CancelAnswer struct {
	Session          json.RawMessage `json:"session"`
	CancelledTaskIDs []string        `json:"cancelledTaskIds"`
}

// Batches of a session cancel: each reads at most cancelReadBatch live tasks
// and writes at most cancelWriteBytes of new task records in one script, so
// no script's work grows with the session (a 1,000-task session is many
// short scripts, with other tenants' commands in between).
const (
	cancelReadBatch  = 4
	cancelWriteBytes = 96 << 10
	maxCancelRounds  = 10000
)

// Cancel ends the session: it stops taking tasks and its hooks close at
// once, then every live task is cancelled in bounded batches and the cancel
// ends with session.cancelled. A replica that dies midway leaves the cancel
// to another one (Resumer), and a repeat of the request finishes it too. A
// repeat after the end is a no-op that answers the session as it is.
func (s *Service) Cancel(ctx context.Context, p authz.Principal, id, reason string, idem idem.Key) ([]byte, bool, error) {
	ses, raw, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, false, err
	}
	part, _ := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
	if r, ok, err := s.store.ReplayOf(ctx, part, idem); err != nil || ok {
		return r.JSON, r.Replayed, err
	}
	if ses.Status == Active {
		now := s.now()
		ses.Status, ses.LastUpdatedAt = Cancelled, events.At(now)
		sraw, err := json.Marshal(ses)
		if err != nil {
			return nil, false, err
		}
		res, err := s.store.BeginCancel(ctx, part, id, sraw, reason, now)
		if err != nil {
			return nil, false, err
		}
		switch res.Outcome {
		case store.OK:
			s.waiters.Notify(waits.Wake{Kind: waits.WakeSession, ID: id, SessionID: id, Types: []string{}})
		case store.Missing:
			return nil, false, problem.ErrNotFound
		}
	}
	body, done, err := s.finishCancel(ctx, part, id, idem)
	if err != nil || done {
		return body, false, err
	}
	// Ended before this request came (or by another replica meanwhile).
	if r, ok, err := s.store.ReplayOf(ctx, part, idem); err != nil || ok {
		return r.JSON, r.Replayed, err
	}
	if _, raw, err = s.Get(ctx, p, id); err != nil {
		return nil, false, err
	}
	body, err = json.Marshal(CancelAnswer{Session: raw, CancelledTaskIDs: []string{}})
	return body, false, err
}

// finishCancel cancels the live tasks of a cancelling session batch by batch
// and ends the cancel. done is false when the session was not cancelling
// (its cancel had ended already).
func (s *Service) finishCancel(ctx context.Context, part int, id string, idem idem.Key) ([]byte, bool, error) {
	for round := 0; round < maxCancelRounds; round++ {
		now := s.now()
		st, err := s.store.CancelBatch(ctx, part, id, cancelReadBatch, now)
		if err != nil {
			return nil, false, err
		}
		if !st.Cancelling {
			return nil, false, nil
		}
		if len(st.Live) > 0 {
			start := time.Now()
			if err := s.cancelBatch(ctx, part, id, st, now); err != nil {
				return nil, false, err
			}
			// A cancel is bulk work: between batches it leaves this replica
			// and Redis to others for twice as long as the batch took, so a
			// large cancel takes at most a third of either.
			if err := pause(ctx, 2*time.Since(start)); err != nil {
				return nil, false, err
			}
			continue
		}
		body, ok, err := s.endCancel(ctx, part, id, st.Reason, idem, now)
		if err != nil || ok {
			return body, ok, err
		}
	}
	return nil, false, fmt.Errorf("%w: the session's tasks keep changing", store.ErrUnavailable)
}

// cancelBatch cancels the live tasks st names, up to cancelWriteBytes of
// new records in one script.
func (s *Service) cancelBatch(ctx context.Context, part int, id string, st store.CancelState, now time.Time) error {
	raws, err := s.store.TaskJSONs(ctx, part, st.Live)
	if err != nil {
		return err
	}
	var changes []store.TaskCancel
	size := 0
	for _, traw := range raws {
		if traw == nil {
			continue // expired: its live entry is pruned by score
		}
		c, live, err := tasks.CancelChange(traw, st.Reason, now)
		if err != nil {
			return err
		}
		if !live {
			continue
		}
		if len(changes) > 0 && size+len(c.JSON) > cancelWriteBytes {
			break
		}
		size += len(c.JSON)
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil
	}
	cancelled, err := s.store.CancelTasks(ctx, part, id, changes, now, s.cfg.Retention)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if slices.Contains(cancelled, c.ID) {
			s.waiters.Notify(waits.Wake{Kind: waits.WakeTask, ID: c.ID, SessionID: id, Revision: c.ExpectRevision + 1,
				Snapshot: c.JSON, Types: []string{wire.EventTaskTerminal}})
		}
	}
	return nil
}

// endCancel writes session.cancelled with every task the cancel ended, once
// no live task is left. ok is false when tasks are left after all.
func (s *Service) endCancel(ctx context.Context, part int, id, reason string, idem idem.Key, now time.Time) ([]byte, bool, error) {
	ids, err := s.store.CancelledSoFar(ctx, part, id)
	if err != nil {
		return nil, false, err
	}
	sraw, err := s.store.GetJSON(ctx, s.store.Keys.Session(part, id))
	if err != nil {
		return nil, false, err
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	data, err := json.Marshal(map[string]any{
		"session": json.RawMessage(sraw), "reason": reason, "cancelledTaskIds": sorted,
	})
	if err != nil {
		return nil, false, err
	}
	ev, err := json.Marshal(events.Event{Type: wire.EventSessionCancelled, At: events.At(now), SessionID: id, Data: data})
	if err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(CancelAnswer{Session: sraw, CancelledTaskIDs: sorted})
	if err != nil {
		return nil, false, err
	}
	res, err := s.store.EndCancel(ctx, store.SessionCancelDone{
		LogWrite: store.LogWrite{Partition: part, Now: now, Retention: s.cfg.Retention, Idem: idem},
		ID:       id, Event: ev, Response: body, Cancelled: len(ids),
	})
	if err != nil {
		return nil, false, err
	}
	switch res.Outcome {
	case store.OK:
		s.waiters.Notify(waits.Wake{Kind: waits.WakeSession, ID: id, SessionID: id, Types: []string{wire.EventSessionCancelled}})
		return body, true, nil
	case store.Replayed:
		return res.ReplayBody, true, nil
	case store.IdemConflict:
		return nil, false, problem.ErrIdempotency
	case store.AlreadyCancelled:
		return nil, false, nil
	}
	return nil, false, nil // tasks left: another round
}

// pause waits d, or less when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
