// Package sessions holds sessions, an agent's conversation: the owner scope
// of its tasks and the log of what the agent must hear about.
//
// It imports tasks (to cancel a session's tasks), endpoints (to check
// notification endpoints), replay (to keep a create's answer sealed for a
// repeat), store, idem, paging, waits, ids, events, problem, authz and
// api/wire, never handlers or callbacks.
package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/replay"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// Statuses of a session.
const (
	Active    = wire.SessionActive
	Cancelled = wire.SessionCancelled
)

// Session is the record, as the API shows it.
type Session = wire.Session[events.Time]

// CreateInput is the body of POST /v1/sessions.
type CreateInput = wire.CreateSession[json.RawMessage]

// Config holds the session limits. Zero means the default.
type Config struct {
	TTL       time.Duration // a session lives this long after creation, longer while its tasks do; default 30 days
	Retention time.Duration // how long its log keeps events; default 30 days
	// AnswerLinks puts the answerUrl of open requests into the task events of
	// the log as readers see them (tasks.Service.AnswerLinks); nil shows the
	// events as stored, without links.
	AnswerLinks *tasks.AnswerLinks
	// Notify checks notification endpoints; nil refuses every endpoint.
	Notify *endpoints.Registrar
	// Vault seals the answer of a create that registered endpoints, which
	// shows their secrets, while it is kept for a repeat (package replay);
	// the vault Notify seals the secrets with. nil: creates register none.
	Vault *authz.Vault
}

// Service creates and reads sessions.
type Service struct {
	cfg     Config
	store   *store.Store
	waiters *waits.Waiters
	now     func() time.Time
}

// NewService wires the service.
func NewService(cfg Config, s *store.Store, w *waits.Waiters, now func() time.Time) *Service {
	if cfg.TTL == 0 {
		cfg.TTL = 30 * 24 * time.Hour
	}
	if cfg.Retention == 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	return &Service{cfg: cfg, store: s, waiters: w, now: now}
}

// Create opens an active session owned by p. With an idempotency key the
// partition follows the key, so a repeat finds its first response.
func (s *Service) Create(ctx context.Context, p authz.Principal, in CreateInput, idem idem.Key) ([]byte, bool, error) {
	if in.Metadata != nil && (len(in.Metadata) == 0 || in.Metadata[0] != '{') {
		return nil, false, &problem.ValidationError{Field: "metadata", Message: "must be an object"}
	}
	eps, records, err := s.cfg.Notify.NewEndpoints(ctx, endpoints.Registrant{Principal: p.ID, Requester: p.ID}, in.Notify)
	if err != nil {
		return nil, false, err
	}
	return s.create(ctx, p, in.Metadata, eps, records, idem)
}

// create writes a new session with its endpoints: eps as the answer shows
// them (secrets included), records as the store keeps them.
func (s *Service) create(ctx context.Context, p authz.Principal, metadata json.RawMessage, eps []wire.Endpoint,
	records store.NewEndpoints, idem idem.Key) ([]byte, bool, error) {
	part := ids.PartitionFor(idem.Scope, s.store.Partitions)
	if idem.Scope == "" {
		part = ids.PartitionFor(ids.NewRequestID(), s.store.Partitions)
	}
	now := s.now()
	ses, raw, ev, err := newSession(p, part, metadata, now)
	if err != nil {
		return nil, false, err
	}
	resp := raw
	if len(eps) > 0 {
		ses.Notify = eps
		if resp, err = json.Marshal(ses); err != nil {
			return nil, false, err
		}
		records.Response = replay.Seal(s.cfg.Vault, p, resp)
	}
	res, err := s.store.CreateSession(ctx, store.SessionCreate{
		LogWrite:  store.LogWrite{Partition: part, Now: now, Retention: s.cfg.Retention, Idem: idem},
		NewRecord: store.NewRecord{ID: ses.SessionID, JSON: raw, Event: ev, ExpiresAt: now.Add(s.cfg.TTL), Endpoints: records},
		Owner:     p.ID,
	})
	if err != nil {
		return nil, false, err
	}
	if res.Outcome == store.OK {
		return resp, false, nil
	}
	reply, err := replay.Settle(s.cfg.Vault, p, res.Outcome, res.ReplayBody, "create session")
	return reply.JSON, reply.Replayed, err
}

// newSession is a new active session of p in partition part, as JSON, and
// its session.created event.
func newSession(p authz.Principal, part int, metadata json.RawMessage, now time.Time) (Session, []byte, []byte, error) {
	ses := Session{
		SessionID: ids.New(ids.SessionPrefix, part), Status: Active, Owner: p.ID,
		CreatedAt: events.At(now), LastUpdatedAt: events.At(now), Metadata: metadata, Notify: []wire.Endpoint{},
	}
	if ses.Metadata == nil {
		ses.Metadata = json.RawMessage("{}")
	}
	raw, err := json.Marshal(ses)
	if err != nil {
		return Session{}, nil, nil, err
	}
	ev, err := json.Marshal(events.Event{
		Type: wire.EventSessionCreated, At: events.At(now), SessionID: ses.SessionID,
		Data: json.RawMessage(`{"session":` + string(raw) + `}`),
	})
	if err != nil {
		return Session{}, nil, nil, err
	}
	return ses, raw, ev, nil
}

// DefaultSession is the id of p's default session, where a task started
// without a session goes (a tool call): the session p's default slot names,
// or, when it names none or names stale (a session the caller found
// cancelled or gone), a new ordinary session of p, made once and named by
// the slot from then on. Concurrent first calls agree on one session: the
// slot and the session are in one partition (ids.PartitionFor(p.ID)) and
// the script that makes the session takes the slot only if it still names
// what the caller saw. A default session p cancelled is replaced on the
// next call that finds it so.
func (s *Service) DefaultSession(ctx context.Context, p authz.Principal, stale string) (string, error) {
	part := ids.PartitionFor(p.ID, s.store.Partitions)
	cur, err := s.store.DefaultSession(ctx, p.ID)
	if err != nil {
		return "", err
	}
	for range 4 {
		if cur != "" && cur != stale {
			return cur, nil
		}
		now := s.now()
		ses, raw, ev, err := newSession(p, part, nil, now)
		if err != nil {
			return "", err
		}
		res, err := s.store.CreateSession(ctx, store.SessionCreate{
			LogWrite:  store.LogWrite{Partition: part, Now: now, Retention: s.cfg.Retention},
			NewRecord: store.NewRecord{ID: ses.SessionID, JSON: raw, Event: ev, ExpiresAt: now.Add(s.cfg.TTL)},
			Owner:     p.ID, Default: true, Replaces: cur,
		})
		if err != nil {
			return "", err
		}
		switch res.Outcome {
		case store.OK:
			return ses.SessionID, nil
		case store.DefaultTaken: // another call made it first: take what the slot names now
			cur = string(res.Current)
		default:
			return "", fmt.Errorf("create default session: unexpected outcome %v", res.Outcome)
		}
	}
	return "", fmt.Errorf("%w: the default session keeps changing", store.ErrUnavailable)
}

// Reset is cancel, then a new active session with the same owner, metadata
// and notification endpoints (the same ids, addresses, kinds and secrets). The new session is created under the caller's idempotency key,
// so a repeated reset answers with the same new session.
func (s *Service) Reset(ctx context.Context, p authz.Principal, id, reason string, key idem.Key) ([]byte, bool, error) {
	if _, _, err := s.Cancel(ctx, p, id, reason, idem.Key{}); err != nil {
		return nil, false, err
	}
	old, _, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, false, err
	}
	part, _ := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
	carried, err := s.store.EndpointSecrets(ctx, s.store.Keys.Session(part, id))
	if err != nil {
		return nil, false, err
	}
	views, err := endpoints.Views(carried.List)
	if err != nil {
		return nil, false, err
	}
	owner := authz.Principal{ID: old.Owner}
	raw, replay, err := s.create(ctx, owner, old.Metadata, views, carried, key)
	if err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(map[string]any{"previousSessionId": id, "session": json.RawMessage(raw)})
	return body, replay, err
}

// Get reads a session its owner (or an admin) may see.
func (s *Service) Get(ctx context.Context, p authz.Principal, id string) (Session, []byte, error) {
	part, err := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
	if err != nil {
		return Session{}, nil, problem.ErrNotFound
	}
	rec, err := s.store.GetOwnedWithEndpoints(ctx, s.store.Keys.Session(part, id), p.ID, p.Admin())
	ses, err := store.Decode[Session]("session", rec.JSON, err)
	if err != nil {
		return Session{}, nil, err
	}
	if !p.CanAccess(ses.Owner) {
		return Session{}, nil, problem.ErrNotFound
	}
	if rec.Endpoints == nil {
		return ses, rec.JSON, nil
	}
	if ses.Notify, err = endpoints.Views(rec.Endpoints); err != nil {
		return Session{}, nil, err
	}
	raw, err := json.Marshal(ses)
	return ses, raw, err
}

// List pages through the caller's sessions, newest first, optionally by
// status. cursor is the Next of the page before ("" for the first).
func (s *Service) List(ctx context.Context, p authz.Principal, status, cursor string, limit int) (paging.Page, error) {
	after, err := paging.After(cursor)
	if err != nil {
		return paging.Page{}, err
	}
	if status != "" && status != Active && status != Cancelled {
		return paging.Page{}, &problem.ValidationError{Field: "status", Message: "must be active or cancelled"}
	}
	indexes := make([]string, s.store.Partitions)
	for i := range indexes {
		indexes[i] = s.store.Keys.OwnerSessions(i, p.ID)
	}
	record := func(id string) string {
		part, _ := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
		return s.store.Keys.Session(part, id)
	}
	return s.store.ListIndexed(ctx, indexes, record, after, limit, store.ListFilter{
		Fields: []string{"owner", "status"},
		Keep:   func(v []string) bool { return v[0] == p.ID && (status == "" || v[1] == status) },
	})
}

// Events reads the session's log after a cursor, only the events of kinds
// when the query names some, waiting up to its wait for an event when there
// is none.
func (s *Service) Events(ctx context.Context, p authz.Principal, id string, q waits.LogQuery) (waits.LogPage, error) {
	return s.PollEvents(ctx, p, id, q).Wait(ctx)
}

// PollEvents begins Events: the session read (which checks access) and its
// log, and the wait ahead when the log has nothing for the query and it
// waits.
func (s *Service) PollEvents(ctx context.Context, p authz.Principal, id string, q waits.LogQuery) *waits.LogPoll {
	w := s.waiters.Wait(waits.WaitKey(waits.WakeSession, id))
	if _, _, err := s.Get(ctx, p, id); err != nil {
		w.Stop()
		return waits.FailedLogPoll(err)
	}
	part, _ := ids.PartitionOf(id, ids.SessionPrefix, s.store.Partitions)
	poll := s.waiters.PollLog(ctx, w, s.store.Source(s.store.Keys.SessionEvents(part, id)), q)
	if s.cfg.AnswerLinks != nil {
		poll.Shown(s.cfg.AnswerLinks.Events)
	}
	return poll
}
