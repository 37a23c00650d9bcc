package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
)

// CancelAnswer is the answer of a cancel: the session and the tasks it ended.
type CancelAnswer struct {
	Session          json.RawMessage `json:"session"`
	CancelledTaskIDs []string        `json:"cancelledTaskIds"`
}

// maxCancelAttempts bounds the retries when tasks change under a cancel.
const maxCancelAttempts = 32

// Cancel ends the session: every live task is cancelled and the session
// becomes cancelled, in one script; hooks of the session close with it. A
// repeat is a no-op that answers the session as it is.
func (s *Service) Cancel(ctx context.Context, p authz.Principal, id, reason string, idem store.Idempotency) ([]byte, bool, error) {
	for attempt := 0; attempt < maxCancelAttempts; attempt++ {
		ses, raw, err := s.Get(ctx, p, id)
		if err != nil {
			return nil, false, err
		}
		part, _ := store.PartitionOf(id, store.SessionPrefix, s.store.Partitions)
		if ses.Status != Active {
			if res, ok, err := s.store.Replay(ctx, part, idem); err != nil || ok {
				return replayed(res, ok, err)
			}
			body, err := json.Marshal(CancelAnswer{Session: raw, CancelledTaskIDs: []string{}})
			return body, false, err
		}
		size, stored, err := s.store.SessionTasks(ctx, part, id)
		if err != nil {
			return nil, false, err
		}
		now := s.now()
		var changes []store.TaskCancel
		for _, traw := range stored {
			c, live, err := tasks.CancelChange(traw, reason, now)
			if err != nil {
				return nil, false, err
			}
			if live {
				changes = append(changes, c)
			}
		}
		sort.Slice(changes, func(i, j int) bool { return changes[i].ID < changes[j].ID })
		ids := make([]string, len(changes))
		for i, c := range changes {
			ids[i] = c.ID
		}
		ses.Status, ses.LastUpdatedAt = Cancelled, events.At(now)
		sraw, err := json.Marshal(ses)
		if err != nil {
			return nil, false, err
		}
		data, err := json.Marshal(map[string]any{
			"session": json.RawMessage(sraw), "reason": reason, "cancelledTaskIds": ids,
		})
		if err != nil {
			return nil, false, err
		}
		ev, err := json.Marshal(events.Event{
			Type: events.SessionCancelled, At: events.At(now), SessionID: id, Data: data,
		})
		if err != nil {
			return nil, false, err
		}
		body, err := json.Marshal(CancelAnswer{Session: sraw, CancelledTaskIDs: ids})
		if err != nil {
			return nil, false, err
		}
		res, err := s.store.CancelSession(ctx, store.SessionCancel{
			Partition: part, ID: id, JSON: sraw, Event: ev, IndexSize: size, Tasks: changes, Response: body,
			Now: now, Retention: s.cfg.Retention, Idem: idem,
		})
		if err != nil {
			return nil, false, err
		}
		switch res.Outcome {
		case store.OK:
			for _, c := range changes {
				s.fanin.Notify(store.Wake{Kind: "t", ID: c.ID, SessionID: id, Revision: c.ExpectRevision + 1, Snapshot: c.JSON})
			}
			s.fanin.Notify(store.Wake{Kind: "s", ID: id, SessionID: id})
			return body, false, nil
		case store.Replayed, store.IdemConflict:
			return replayed(res, true, nil)
		case store.Missing:
			return nil, false, ErrNotFound
		case store.Conflict, store.AlreadyCancelled:
			continue // tasks moved or another cancel won: read again
		}
		return nil, false, fmt.Errorf("cancel session: unexpected outcome %d", res.Outcome)
	}
	return nil, false, fmt.Errorf("%w: the session's tasks keep changing", store.ErrUnavailable)
}

func replayed(res store.Result, ok bool, err error) ([]byte, bool, error) {
	if err != nil || !ok {
		return nil, false, err
	}
	if res.Outcome == store.IdemConflict {
		return nil, false, ErrIdempotency
	}
	return res.ReplayBody, true, nil
}

// Reset is cancel, then a new active session with the same owner and
// metadata. The new session is created under the caller's idempotency key,
// so a repeated reset answers with the same new session.
func (s *Service) Reset(ctx context.Context, p authz.Principal, id, reason string, idem store.Idempotency) ([]byte, bool, error) {
	if _, _, err := s.Cancel(ctx, p, id, reason, store.Idempotency{}); err != nil {
		return nil, false, err
	}
	old, _, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, false, err
	}
	owner := authz.Principal{ID: old.Owner}
	raw, replay, err := s.Create(ctx, owner, CreateInput{Metadata: old.Metadata}, idem)
	if err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(map[string]any{"previousSessionId": id, "session": json.RawMessage(raw)})
	return body, replay, err
}
