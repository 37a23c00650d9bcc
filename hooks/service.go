package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/cache"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// Config holds the hook limits. The zero value means the defaults.
type Config struct {
	PublicURL     string        // ingest URLs start with it; default "http://localhost:8080"
	DefaultTTL    time.Duration // of a session's hook; a task's hook defaults to the task's remaining life; default 7 days
	MaxTTL        time.Duration // default 30 days
	Tombstone     time.Duration // how long a hook's records stay after it expires (posts get 410, reads still work); default 24h
	MaxDeliveries int           // deliveries of one event to one group before it is dead-lettered; default 10
	RateLimit     float64       // posts per second per hook; default 50
	Burst         int           // posts a hook takes at once above the rate; default 100
	MaxGroups     int           // consumer groups per hook; default 16
	CacheSize     int           // token hashes cached on this replica; default 10000
	// Vault seals verify secrets in the store; nil: a vault with a key made
	// at start, for a store that lives no longer than the process.
	Vault     *authz.Vault
	Retention time.Duration // of the session log that hook.received events go to; default 30 days
}

func (c Config) withDefaults() Config {
	c.PublicURL = cmp.Or(c.PublicURL, "http://localhost:8080")
	c.DefaultTTL = cmp.Or(c.DefaultTTL, 7*24*time.Hour)
	c.MaxTTL = cmp.Or(c.MaxTTL, 30*24*time.Hour)
	c.DefaultTTL = min(c.DefaultTTL, c.MaxTTL)
	c.Tombstone = cmp.Or(c.Tombstone, 24*time.Hour)
	c.MaxDeliveries = cmp.Or(c.MaxDeliveries, 10)
	c.RateLimit = cmp.Or(c.RateLimit, 50)
	c.Burst = cmp.Or(c.Burst, 100)
	c.MaxGroups = cmp.Or(c.MaxGroups, 16)
	c.CacheSize = cmp.Or(c.CacheSize, 10000)
	c.Retention = cmp.Or(c.Retention, 30*24*time.Hour)
	return c
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.MaxDeliveries < 1 {
		errs = append(errs, errors.New("hook max deliveries must be at least 1"))
	}
	if c.RateLimit < 0 || c.RateLimit > 1000 {
		errs = append(errs, errors.New("hook rate limit must be 0 to 1000 per second"))
	}
	if c.Burst < 1 {
		errs = append(errs, errors.New("hook burst must be at least 1"))
	}
	return errors.Join(errs...)
}

// rateInterval is the time one post uses up of the hook's rate.
func (c Config) rateInterval() time.Duration {
	iv := time.Duration(float64(time.Second) / c.RateLimit)
	return max(iv.Round(time.Millisecond), time.Millisecond)
}

// Tasks is what hooks ask the task service: what a hook bound to a task
// needs of it (tasks.Service.Parent). Who may bind a hook to a task is the
// task service's rule.
type Tasks interface {
	Parent(ctx context.Context, p authz.Principal, taskID string) (sessionID string, expiresAt time.Time, terminal bool, err error)
}

var _ Tasks = (*tasks.Service)(nil)

// Service runs hooks against the store.
type Service struct {
	cfg     Config
	store   *store.Store
	waiters *waits.Waiters
	tasks   Tasks
	metrics *metrics.Metrics
	log     *slog.Logger
	tokens  *cache.LRU[tokenEntry] // by token hash
	refs    *cache.LRU[hookRef]    // by hook id
	now     func() time.Time
}

// NewService wires the service. now is the clock (time.Now in production).
func NewService(cfg Config, s *store.Store, w *waits.Waiters, t Tasks, m *metrics.Metrics, log *slog.Logger,
	now func() time.Time) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Vault == nil {
		cfg.Vault = authz.NewRandomVault()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg: cfg, store: s, waiters: w, tasks: t, metrics: m, log: log, tokens: cache.New[tokenEntry](cfg.CacheSize),
		refs: cache.New[hookRef](cfg.CacheSize), now: now,
	}, nil
}

// Create makes an open hook bound to a session, or to a task and its
// session. The answer carries the token, which is shown this once: a replay
// of the create (same Idempotency-Key) answers without it.
func (s *Service) Create(ctx context.Context, p authz.Principal, in CreateInput, key idem.Key) (idem.Reply, error) {
	if err := validateCreate(&in); err != nil {
		return idem.Reply{}, err
	}
	now := s.now()
	ttl, part, sessionID, err := s.bind(ctx, p, &in, now)
	if err != nil {
		return idem.Reply{}, err
	}
	closes := now.Add(ttl)
	h := Hook{
		HookID: ids.New(ids.HookPrefix, part), Status: Open, Owner: p.ID, SessionID: sessionID,
		TaskID: in.TaskID, Label: in.Label, CreatedAt: events.At(now), ExpiresAt: events.At(closes),
		TTLMs: ttl.Milliseconds(), Verify: viewOf(in.Verify), Response: in.Response, DedupeHeader: in.DedupeHeader,
	}
	token := NewToken(part)
	cfg := ingestConfig{
		HookID: h.HookID, TaskID: h.TaskID, SessionID: sessionID, TokenHash: HashToken(token),
		Verify: in.Verify, Response: in.Response, DedupeHeader: in.DedupeHeader,
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return idem.Reply{}, err
	}
	rawCfg, err := json.Marshal(s.sealed(cfg))
	if err != nil {
		return idem.Reply{}, err
	}
	created, err := json.Marshal(Created{Hook: h, Token: token, URL: s.cfg.PublicURL + "/v1/callback/" + token})
	if err != nil {
		return idem.Reply{}, err
	}
	// The record of the key lives in the partition of the task or session
	// the body names; the claim makes a repeat naming another one a conflict.
	res, err := store.ClaimedCreate(ctx, s.store, key, func() (store.Result, error) {
		return s.store.CreateHook(ctx, store.HookCreate{
			Partition: part, ID: h.HookID, TaskID: h.TaskID, SessionID: sessionID, Principal: p.ID, Admin: p.Admin(),
			TokenHash: cfg.TokenHash, JSON: raw, Config: rawCfg, Replay: raw, Now: now, ClosesAt: closes,
			ExpiresAt: closes.Add(s.cfg.Tombstone), MaxVisibility: MaxVisibility, Idem: key,
		})
	}, func(r store.Result) bool {
		switch r.Outcome {
		case store.SessionMissing, store.TaskMissing, store.SessionNotActive, store.TaskTerminal:
			return true // nothing was stored: the key may serve another body
		}
		return false
	})
	if err != nil {
		return idem.Reply{}, err
	}
	switch res.Outcome {
	case store.OK:
		s.tokens.Put(cfg.TokenHash, tokenEntry{cfg: cfg, closesAt: closes}, nil)
		s.refs.Put(h.HookID, hookRef{TaskID: h.TaskID, SessionID: sessionID, ClosesAt: h.ExpiresAt.Time}, nil)
		return idem.Reply{JSON: created}, nil
	case store.SessionMissing, store.TaskMissing:
		return idem.Reply{}, problem.ErrNotFound
	case store.SessionNotActive:
		return idem.Reply{}, problem.ErrSessionNotActive
	case store.TaskTerminal:
		return idem.Reply{}, ErrTaskTerminal
	}
	return store.Settle(res.Outcome, res.ReplayBody, "create hook")
}

// bind finds what a new hook belongs to: its partition and session, and its
// effective TTL. Somebody else's task or session does not exist.
func (s *Service) bind(ctx context.Context, p authz.Principal, in *CreateInput, now time.Time) (time.Duration, int, string, error) {
	ttl := tasks.TTL(in.TTLMs, s.cfg.DefaultTTL, s.cfg.MaxTTL)
	if in.TaskID == "" {
		part, err := ids.PartitionOf(in.SessionID, ids.SessionPrefix, s.store.Partitions)
		if err != nil {
			return 0, 0, "", problem.ErrNotFound
		}
		return ttl, part, in.SessionID, nil
	}
	part, err := ids.PartitionOf(in.TaskID, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return 0, 0, "", problem.ErrNotFound
	}
	sessionID, expiresAt, terminal, err := s.tasks.Parent(ctx, p, in.TaskID)
	if errors.Is(err, problem.ErrNotFound) {
		return 0, 0, "", problem.ErrNotFound
	}
	if err != nil {
		return 0, 0, "", err
	}
	if in.SessionID != "" && in.SessionID != sessionID {
		return 0, 0, "", problem.Invalid("sessionId", "is not the session of the task")
	}
	if terminal {
		return 0, 0, "", ErrTaskTerminal
	}
	if !expiresAt.IsZero() {
		left := expiresAt.Sub(now)
		if left <= 0 {
			return 0, 0, "", problem.ErrNotFound
		}
		if in.TTLMs == nil {
			ttl = min(left, s.cfg.MaxTTL)
		}
		ttl = min(ttl, left)
	}
	return ttl, part, sessionID, nil
}

// Get reads a hook its owner (or an admin) may see, with its status as of
// now as the store decides it (as for a post): a hook whose TTL ran out,
// whose task ended or whose session was cancelled reads as closed. It costs
// one round trip when this replica knows what the hook belongs to, else at
// most two.
func (s *Service) Get(ctx context.Context, p authz.Principal, id string) (Hook, []byte, error) {
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return Hook{}, nil, problem.ErrNotFound
	}
	ask := store.HookAsk{Partition: part, ID: id}
	if ref, ok := s.refs.Get(id); ok {
		ask.Parents, ask.TaskID, ask.SessionID = true, ref.TaskID, ref.SessionID
	}
	now := s.now()
	sts, err := s.store.HookStatuses(ctx, p.ID, p.Admin(), now, []store.HookAsk{ask})
	if err != nil {
		return Hook{}, nil, err
	}
	hs, err := s.withStatus(ctx, p, now, sts)
	if err != nil {
		return Hook{}, nil, err
	}
	if len(hs) == 0 {
		return Hook{}, nil, problem.ErrNotFound
	}
	h := hs[0]
	s.refs.Put(id, hookRef{TaskID: h.TaskID, SessionID: h.SessionID, ClosesAt: h.ExpiresAt.Time}, nil)
	raw, err := json.Marshal(h)
	return h, raw, err
}

// load reads a hook's record as stored, for its owner (or an admin).
func (s *Service) load(ctx context.Context, p authz.Principal, id string) (Hook, int, error) {
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return Hook{}, 0, problem.ErrNotFound
	}
	rec, err := s.store.GetHook(ctx, part, id)
	if errors.Is(err, store.ErrNotFound) {
		return Hook{}, 0, problem.ErrNotFound
	}
	if err != nil {
		return Hook{}, 0, err
	}
	if !p.CanAccess(rec.Owner) {
		return Hook{}, 0, problem.ErrNotFound
	}
	var h Hook
	if err := json.Unmarshal(rec.JSON, &h); err != nil {
		return Hook{}, 0, fmt.Errorf("decode hook: %w", err)
	}
	return h, part, nil
}

// withStatus decodes hooks the store read with their status, leaving out
// those that do not exist for p. The ones it could not decide without their
// task and session are asked again with them, all in one round trip.
func (s *Service) withStatus(ctx context.Context, p authz.Principal, now time.Time, sts []store.HookStatus) ([]Hook, error) {
	hs := make([]Hook, 0, len(sts))
	var again []store.HookAsk
	var at []int
	for _, st := range sts {
		if st.Outcome != store.OK {
			continue
		}
		var h Hook
		if err := json.Unmarshal(st.JSON, &h); err != nil {
			return nil, fmt.Errorf("decode hook: %w", err)
		}
		if st.NeedsParents {
			part, _ := ids.PartitionOf(h.HookID, ids.HookPrefix, s.store.Partitions)
			again = append(again, store.HookAsk{Partition: part, ID: h.HookID, Parents: true, TaskID: h.TaskID, SessionID: h.SessionID})
			at = append(at, len(hs))
		}
		h.Status, h.CloseReason = settled(h, st)
		hs = append(hs, h)
	}
	more, err := s.store.HookStatuses(ctx, p.ID, p.Admin(), now, again)
	if err != nil {
		return nil, err
	}
	for j, st := range more {
		if st.Outcome == store.OK { // else it went in between: shown as read
			hs[at[j]].Status, hs[at[j]].CloseReason = settled(hs[at[j]], st)
		}
	}
	return hs, nil
}

// settled is a hook's status and close reason as the store decided them.
func settled(h Hook, st store.HookStatus) (string, string) {
	if st.Closed {
		return Closed, st.Reason
	}
	return h.Status, h.CloseReason
}

// ListFilter narrows GET /v1/hooks.
type ListFilter struct {
	TaskID    string
	SessionID string
}

// List pages through the caller's own hooks, newest first, each with its
// status as of now, as JSON. cursor is the Next of the page before ("" for
// the first).
func (s *Service) List(ctx context.Context, p authz.Principal, f ListFilter, cursor string, limit int) (paging.Page, error) {
	after, err := paging.After(cursor)
	if err != nil {
		return paging.Page{}, err
	}
	var indexes []string
	switch {
	case f.TaskID != "":
		indexes, err = s.parentIndex(ctx, p, f.TaskID, ids.TaskPrefix, s.store.Keys.Task, s.store.Keys.TaskHooks, s.store.Executor)
	case f.SessionID != "":
		indexes, err = s.parentIndex(ctx, p, f.SessionID, ids.SessionPrefix, s.store.Keys.Session, s.store.Keys.SessionHooks, s.store.Owner)
	default:
		indexes = make([]string, s.store.Partitions)
		for i := range indexes {
			indexes[i] = s.store.Keys.OwnerHooks(i, p.ID)
		}
	}
	if err != nil || indexes == nil {
		return paging.Page{}, err
	}
	now := s.now()
	page, err := s.store.ListHooks(ctx, indexes, after, limit, p.ID, p.Admin(), now)
	if err != nil {
		return paging.Page{}, err
	}
	hs, err := s.withStatus(ctx, p, now, page.Hooks)
	if err != nil {
		return paging.Page{}, err
	}
	out := paging.Page{Items: make([][]byte, len(hs)), Next: page.Next}
	for i, h := range hs {
		if out.Items[i], err = json.Marshal(h); err != nil {
			return paging.Page{}, err
		}
	}
	return out, nil
}

// parentIndex is the index of the hooks of one task or session (id, with
// prefix, at the record key of record), or none when it is not the caller's
// (whose is the principal who makes hooks on it: a session's owner, a
// task's executor): a task or session that is not the caller's answers
// exactly as one that does not exist.
func (s *Service) parentIndex(ctx context.Context, p authz.Principal, id, prefix string,
	record, hooks func(part int, id string) string, whose func(ctx context.Context, key string) (string, error)) ([]string, error) {
	part, err := ids.PartitionOf(id, prefix, s.store.Partitions)
	if err != nil {
		return nil, nil
	}
	owner, err := whose(ctx, record(part, id))
	if err != nil || owner != p.ID {
		return nil, err
	}
	return []string{hooks(part, id)}, nil
}

// Close closes a hook: posts get 410 from now on. Its events stay
// readable until its records expire. Closing a closed hook is a no-op.
func (s *Service) Close(ctx context.Context, p authz.Principal, id string, key idem.Key) (idem.Reply, error) {
	h, part, err := s.load(ctx, p, id)
	if err != nil {
		if errors.Is(err, problem.ErrNotFound) {
			if r, ok, rerr := s.replay(ctx, id, key); rerr != nil || ok {
				return r, rerr
			}
		}
		return idem.Reply{}, err
	}
	at := events.At(s.now())
	h.Status, h.CloseReason, h.ClosedAt = Closed, wire.CloseReasonClosed, &at
	closed, err := json.Marshal(h)
	if err != nil {
		return idem.Reply{}, err
	}
	res, err := s.store.CloseHook(ctx, store.HookClose{
		Partition: part, ID: id, SessionID: h.SessionID, Principal: p.ID, Admin: p.Admin(), ClosedJSON: closed, Idem: key,
	})
	if err != nil {
		return idem.Reply{}, err
	}
	if res.Outcome == store.OK {
		// The script woke the other replicas' reads through the wake stream.
		s.waiters.Notify(waits.Wake{Kind: waits.WakeHook, ID: id, SessionID: h.SessionID, Types: []string{}})
		return idem.Reply{JSON: res.JSON}, nil
	}
	return store.Settle(res.Outcome, res.ReplayBody, "close hook")
}

// replay answers a repeat of a request whose hook has since expired.
func (s *Service) replay(ctx context.Context, id string, key idem.Key) (idem.Reply, bool, error) {
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return idem.Reply{}, false, nil
	}
	return s.store.ReplayOf(ctx, part, key)
}
