package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/snapdelta"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/cache"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/replay"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/waits"
)

// Config holds the task limits. The zero value means the defaults.
type Config struct {
	DefaultTTL   time.Duration // default 7 days
	MaxTTL       time.Duration // default 30 days
	PollInterval time.Duration // suggested to pollers; default 5s
	CacheSize    int           // snapshots (and answer tokens) kept on this replica; default 10000
	PublicURL    string        // answer URLs start with it; default "http://localhost:8080"
	MaxLive      int           // live tasks one session may hold; default 10000
	MaxTaskBytes int           // a task record's largest size, as JSON; default 1 MiB
	// Notify checks notification endpoints; nil refuses every endpoint.
	Notify *endpoints.Registrar
	// Vault seals the answer of a create that registered endpoints, which
	// shows their secrets, while it is kept for a repeat (package replay);
	// the vault Notify seals the secrets with. nil: creates register none.
	Vault *authz.Vault
	// AnswerKey makes the answer tokens (see AnswerLinks): every replica of a
	// deployment needs the same one. Default: a random key made once per
	// process, so answer links work on this process only.
	AnswerKey []byte
}

func (c Config) withDefaults() Config {
	c.DefaultTTL = cmp.Or(c.DefaultTTL, 7*24*time.Hour)
	c.MaxTTL = cmp.Or(c.MaxTTL, 30*24*time.Hour)
	c.DefaultTTL = min(c.DefaultTTL, c.MaxTTL)
	c.PollInterval = cmp.Or(c.PollInterval, 5*time.Second)
	c.CacheSize = cmp.Or(c.CacheSize, 10000)
	c.PublicURL = cmp.Or(c.PublicURL, "http://localhost:8080")
	c.MaxLive = cmp.Or(c.MaxLive, 10000)
	c.MaxTaskBytes = cmp.Or(c.MaxTaskBytes, 1<<20)
	if len(c.AnswerKey) == 0 {
		c.AnswerKey = processAnswerKey()
	}
	return c
}

// Refusals of a task write, besides the shared ones of package problem.
var (
	// ErrTooManyTasks and ErrTooLarge are what TooManyTasksError and
	// TooLargeError are (errors.Is).
	ErrTooManyTasks = errors.New("too many live tasks in the session")
	ErrTooLarge     = errors.New("task too large")
)

// TooManyTasksError refuses a create in a session that holds as many live
// tasks as it may.
type TooManyTasksError struct{ Max int }

func (e *TooManyTasksError) Is(target error) bool { return target == ErrTooManyTasks }

func (e *TooManyTasksError) Error() string {
	return fmt.Sprintf("the session holds %d live tasks, the most it may; finish or cancel some first", e.Max)
}

// TooLargeError refuses a change that would make the task record larger than
// it may be.
type TooLargeError struct{ Size, Max int }

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the task would be %d bytes as JSON, above the limit of %d", e.Size, e.Max)
}

// StateError is a command the task's state refuses; Task is the task as it
// is, so the caller sees the real outcome.
type StateError struct {
	Err  error
	Task Task
}

func (e *StateError) Error() string { return e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// Ended is the task a command was refused because it had ended (as a
// live-only cancel of an ended task is), and whether err is that refusal.
func Ended(err error) (Task, bool) {
	var state *StateError
	if errors.As(err, &state) && errors.Is(state.Err, ErrTerminal) {
		return state.Task, true
	}
	return Task{}, false
}

// Service runs task commands and reads against the store.
type Service struct {
	cfg     Config
	store   *store.Store
	waiters *waits.Waiters
	metrics *metrics.Metrics
	cache   snapshots
	answers *cache.LRU[answerRef] // by token hash
	links   *AnswerLinks
	now     func() time.Time
	// sessions makes default sessions (UseSessions); defaults is this
	// replica's hint of each principal's default session id.
	sessions DefaultSessions
	defaults *cache.LRU[string]
}

// NewService makes the service and hands its snapshot cache the task
// wake-ups of w, so a write on another replica refreshes or stales this
// replica's snapshot of the task. now is the clock (time.Now in production).
func NewService(cfg Config, s *store.Store, w *waits.Waiters, m *metrics.Metrics, now func() time.Time) *Service {
	cfg = cfg.withDefaults()
	svc := &Service{cfg: cfg, store: s, waiters: w, metrics: m, cache: newSnapshots(cfg.CacheSize),
		answers: cache.New[answerRef](cfg.CacheSize), links: NewAnswerLinks(cfg.AnswerKey, cfg.PublicURL), now: now,
		defaults: cache.New[string](cfg.CacheSize)}
	w.OnWake(func(wk waits.Wake) {
		if wk.Kind != waits.WakeTask {
			return
		}
		if wk.Snapshot != nil {
			svc.cache.put(wk.ID, wk.Revision, wk.Snapshot)
		} else {
			svc.cache.stale(wk.ID, wk.Revision)
		}
	})
	return svc
}

// CreateInput is the body of POST /v1/tasks.
type CreateInput = wire.CreateTask[json.RawMessage]

const maxTextField = 200

// A Start is what starting a task through a tool adds to a create.
type Start struct {
	Executor string // who executes the task; "" is the owner
	// Endpoints the task gets besides the create's notify: List is a JSON
	// array of endpoint views (wire.EndpointView), Secrets the endpoint id /
	// sealed secret pairs, already sealed; Response is unused. They are never
	// shown to the creator: the task's notify shows the create's own.
	Endpoints store.NewEndpoints
	// DefaultSession: in.SessionID is empty, and the task goes to the
	// caller's default session, made on first use.
	DefaultSession bool
}

// DefaultSessions finds and makes principals' default sessions:
// sessions.Service.
type DefaultSessions interface {
	// DefaultSession is p's default session id: the one it has, or, when it
	// has none or its default is stale (found cancelled or gone), a new one.
	DefaultSession(ctx context.Context, p authz.Principal, stale string) (string, error)
}

// UseSessions gives the service what makes default sessions, before it
// serves a create with Start.DefaultSession (the sessions service is made
// after this one, from its answer links).
func (s *Service) UseSessions(d DefaultSessions) { s.sessions = d }

// Create writes a new working task: the receipt, durable before it returns.
func (s *Service) Create(ctx context.Context, p authz.Principal, in CreateInput, key idem.Key) (idem.Reply, error) {
	return s.CreateWith(ctx, p, in, Start{}, key)
}

// maxDefaultTries bounds the default sessions one create tries: each one
// after the first was found cancelled or gone under it.
const maxDefaultTries = 4

// CreateWith is Create for a task started another way than POST /v1/tasks
// (a tool call). With st.DefaultSession and no session named, the task goes
// to the caller's default session: known to this replica from an earlier
// call (a hint, so the steady state costs the create's one round trip), or
// asked of the sessions service. A default session found cancelled or gone
// (the owner cancelled it, or it expired) is replaced by a new one and the
// create tried again.
func (s *Service) CreateWith(ctx context.Context, p authz.Principal, in CreateInput, st Start, key idem.Key) (idem.Reply, error) {
	if !st.DefaultSession || in.SessionID != "" {
		return s.create(ctx, p, in, st, key)
	}
	if s.sessions == nil {
		return idem.Reply{}, errors.New("create task: no default sessions configured")
	}
	sid, known := s.defaults.Get(p.ID)
	stale := ""
	for range maxDefaultTries {
		if !known {
			var err error
			if sid, err = s.sessions.DefaultSession(ctx, p, stale); err != nil {
				return idem.Reply{}, err
			}
			s.defaults.Put(p.ID, sid, nil)
		}
		in.SessionID = sid
		reply, err := s.create(ctx, p, in, st, key)
		if !errors.Is(err, problem.ErrNotFound) && !errors.Is(err, problem.ErrSessionNotActive) {
			return reply, err
		}
		gone := sid
		s.defaults.Drop(p.ID, func(v string) bool { return v == gone })
		stale, known = sid, false
	}
	return idem.Reply{}, fmt.Errorf("%w: the default session keeps ending", store.ErrUnavailable)
}

func (s *Service) create(ctx context.Context, p authz.Principal, in CreateInput, st Start, key idem.Key) (idem.Reply, error) {
	part, err := ids.PartitionOf(in.SessionID, ids.SessionPrefix, s.store.Partitions)
	if in.SessionID == "" {
		return idem.Reply{}, problem.Invalid("sessionId", "is required")
	}
	if err != nil {
		return idem.Reply{}, problem.ErrNotFound
	}
	if err := s.checkCreate(in); err != nil {
		return idem.Reply{}, err
	}
	// A requester's provider tokens go to the task's owner, and its answers
	// steer the task: naming anybody else needs a grant in the creator's
	// token. Checked before anything is read or written, so a refused
	// create stores nothing and a repeat under an Idempotency-Key cannot
	// replay a task this token may not create now.
	if in.Requester != "" && !p.CanActFor(in.Requester) {
		s.count("create", problem.ErrRequesterNotAllowed)
		return idem.Reply{}, problem.ErrRequesterNotAllowed
	}
	now := s.now()
	ttl := TTL(in.TTLMs, s.cfg.DefaultTTL, s.cfg.MaxTTL)
	poll := s.cfg.PollInterval.Milliseconds()
	if in.PollIntervalMs != nil {
		poll = *in.PollIntervalMs
	}
	ttlMs := ttl.Milliseconds()
	expires := events.At(now.Add(ttl))
	t := Task{
		TaskID: ids.New(ids.TaskPrefix, part), SessionID: in.SessionID,
		Owner: p.ID, Requester: in.Requester, Status: Working, Revision: 1,
		Kind: in.Kind, Label: in.Label, Input: in.Input, Metadata: in.Metadata,
		InputResponses: []InputResponse{},
		CreatedAt:      events.At(now), LastUpdatedAt: events.At(now),
		TTLMs: &ttlMs, ExpiresAt: &expires, PollIntervalMs: poll,
	}
	if t.Requester == "" {
		t.Requester = p.ID
	}
	t.Executor = cmp.Or(st.Executor, p.ID)
	raw, err := json.Marshal(t)
	if err != nil {
		return idem.Reply{}, err
	}
	if len(raw) > s.cfg.MaxTaskBytes {
		return idem.Reply{}, &TooLargeError{Size: len(raw), Max: s.cfg.MaxTaskBytes}
	}
	ev, err := storedEvent(t, now, Emitted{Type: wire.EventTaskCreated, Data: map[string]any{}})
	if err != nil {
		return idem.Reply{}, err
	}
	eps, records, err := s.cfg.Notify.NewEndpoints(ctx, endpoints.Registrant{Principal: p.ID, Requester: t.Requester}, in.Notify)
	if err != nil {
		return idem.Reply{}, err
	}
	resp := raw
	if len(eps) > 0 {
		t.Notify = eps
		if resp, err = json.Marshal(t); err != nil {
			return idem.Reply{}, err
		}
		records.Response = replay.Seal(s.cfg.Vault, p, resp)
	}
	if records, err = withStartEndpoints(st.Endpoints, records); err != nil {
		return idem.Reply{}, err
	}
	// The record of the key lives in the session's partition; the claim makes
	// a repeat naming another session a conflict too.
	res, err := store.ClaimedCreate(ctx, s.store, key, func() (store.Result, error) {
		return s.store.CreateTask(ctx, store.TaskCreate{
			LogWrite:  store.LogWrite{Partition: part, Now: now, Retention: s.cfg.MaxTTL, Idem: key},
			NewRecord: store.NewRecord{ID: t.TaskID, JSON: raw, Event: ev.JSON, ExpiresAt: expires.Time, Endpoints: records},
			EventCut:  ev.Cut, SessionID: t.SessionID, Principal: p.ID, Admin: p.Admin(),
			Requester: t.Requester, Executor: t.Executor, Kind: t.Kind, MaxLive: s.cfg.MaxLive,
			WakesHere: true,
		})
	}, func(r store.Result) bool {
		return r.Outcome == store.SessionMissing || r.Outcome == store.SessionNotActive || r.Outcome == store.TooManyTasks
	})
	if err != nil {
		s.count(CommandKind("create"), err)
		return idem.Reply{}, err
	}
	switch res.Outcome {
	case store.OK:
		stored := t
		stored.Notify = nil // in the answer only
		s.cache.putTask(t.TaskID, raw, stored)
		s.waiters.Notify(waits.Wake{Kind: waits.WakeTask, ID: t.TaskID, SessionID: t.SessionID, Revision: 1, Snapshot: raw,
			Types: []string{wire.EventTaskCreated}})
		s.count("create", nil)
		s.metrics.TasksEntered.WithLabelValues(string(Working)).Inc()
		return idem.Reply{JSON: resp}, nil
	case store.SessionMissing:
		return idem.Reply{}, problem.ErrNotFound
	case store.SessionNotActive:
		return idem.Reply{}, problem.ErrSessionNotActive
	case store.TooManyTasks:
		s.count("create", ErrTooManyTasks)
		return idem.Reply{}, &TooManyTasksError{Max: s.cfg.MaxLive}
	}
	return replay.Settle(s.cfg.Vault, p, res.Outcome, res.ReplayBody, "create task")
}

// withStartEndpoints puts a start's endpoints in front of the create's own:
// the task's endpoint list, which the outbox routes from, holds both, and
// the answer (records.Response) shows the create's own only. The start's
// are marked as the executor's (store.EndpointByExecutor), so the owner's
// reads, removals and cap pass them over.
func withStartEndpoints(start, records store.NewEndpoints) (store.NewEndpoints, error) {
	if len(start.List) == 0 {
		return records, nil
	}
	var held []map[string]json.RawMessage
	if err := json.Unmarshal(start.List, &held); err != nil {
		return store.NewEndpoints{}, fmt.Errorf("start endpoints: %w", err)
	}
	list := make([]json.RawMessage, len(held))
	for i, ep := range held {
		ep[store.EndpointByExecutor] = json.RawMessage("true")
		list[i], _ = json.Marshal(ep)
	}
	if len(records.List) > 0 {
		var own []json.RawMessage
		if err := json.Unmarshal(records.List, &own); err != nil {
			return store.NewEndpoints{}, fmt.Errorf("notify endpoints: %w", err)
		}
		list = append(list, own...)
	}
	merged, err := json.Marshal(list)
	if err != nil {
		return store.NewEndpoints{}, err
	}
	return store.NewEndpoints{
		List: merged, Secrets: append(append([]string(nil), start.Secrets...), records.Secrets...), Response: records.Response,
	}, nil
}

// TTL is the lifetime a create asked for in ttlMs, def when it asked for
// none, cut to max (compared in milliseconds: a huge ttlMs overflows a
// Duration). Hooks take their lifetime the same way.
func TTL(ttlMs *int64, def, max time.Duration) time.Duration {
	if ttlMs == nil {
		return min(def, max)
	}
	return time.Duration(min(*ttlMs, max.Milliseconds())) * time.Millisecond
}

func (s *Service) checkCreate(in CreateInput) error {
	if len(in.Kind) > maxTextField {
		return problem.Invalid("kind", "at most %d bytes", maxTextField)
	}
	if len(in.Label) > maxTextField {
		return problem.Invalid("label", "at most %d bytes", maxTextField)
	}
	if len(in.Requester) > 512 {
		return problem.Invalid("requester", "at most 512 bytes")
	}
	if in.Metadata != nil && (len(in.Metadata) == 0 || in.Metadata[0] != '{') {
		return problem.Invalid("metadata", "must be an object")
	}
	if in.TTLMs != nil && *in.TTLMs < 1000 {
		return problem.Invalid("ttlMs", "must be at least 1000")
	}
	if in.PollIntervalMs != nil && (*in.PollIntervalMs < 100 || *in.PollIntervalMs > 3600_000) {
		return problem.Invalid("pollIntervalMs", "must be 100 to 3600000")
	}
	return nil
}

// AnswerLinks is what puts the answerUrl of open requests into tasks and
// events as readers see them.
func (s *Service) AnswerLinks() *AnswerLinks { return s.links }

// Get reads a task for someone allowed to see it (owner, executor,
// requester, admin),
// as they see it. The store checks who asks before it sends the record, so
// another principal's task costs what a missing one costs.
func (s *Service) Get(ctx context.Context, p authz.Principal, id string) (Task, []byte, error) {
	t, raw, err := s.read(ctx, p, id)
	if err != nil {
		return Task{}, nil, err
	}
	s.links.ShowTask(&t)
	return t, s.links.Task(raw), nil
}

// read is Get in the stored form: what commands are decided on and written
// from, with no answer link in it.
func (s *Service) read(ctx context.Context, p authz.Principal, id string) (Task, []byte, error) {
	part, err := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return Task{}, nil, problem.ErrNotFound
	}
	raw, err := s.store.GetOwned(ctx, s.store.Keys.Task(part, id), p.ID, p.Admin(), true)
	t, err := store.Decode[Task]("task", raw, err)
	if err != nil {
		return Task{}, nil, err
	}
	if !canRead(p, t) {
		return Task{}, nil, problem.ErrNotFound
	}
	s.cache.putTask(id, raw, t)
	return t, raw, nil
}

// load reads the stored task with no access check, for callers whose right
// to it is settled already: the holder of an answer token, a waiter whose
// first read was checked. A task found gone leaves the snapshot cache too.
func (s *Service) load(ctx context.Context, part int, id string) (Task, []byte, error) {
	raw, err := s.store.GetJSON(ctx, s.store.Keys.Task(part, id))
	t, err := store.Decode[Task]("task", raw, err)
	if errors.Is(err, problem.ErrNotFound) {
		s.cache.drop(id)
	}
	if err != nil {
		return Task{}, nil, err
	}
	s.cache.putTask(id, raw, t)
	return t, raw, nil
}

// canRead is who may see a task: its owner (or an admin), its executor
// and its requester.
func canRead(p authz.Principal, t Task) bool {
	return p.CanAccess(t.Owner) || p.ID == t.Executor || p.ID == t.Requester
}

// canRun is who may give a command: the owner cancels, the owner or the
// requester answers, and the executor (or an admin) does everything else,
// which is the work and the report on it.
func canRun(p authz.Principal, t Task, kind CommandKind) bool {
	switch kind {
	case CmdCancel:
		return p.CanAccess(t.Owner)
	case CmdRespond:
		return p.CanAccess(t.Owner) || p.ID == t.Requester
	}
	return mayExecute(p, t)
}

// mayExecute is whether p may act as the task's executor: the executor
// itself, or an admin.
func mayExecute(p authz.Principal, t Task) bool { return p.CanAccess(t.Executor) }

// maxAttempts bounds the compare-and-set retries of one command. Each retry
// means another command won the race, so the task's history moved on.
const maxAttempts = 64

// Run applies a command to a task for p and answers with the task after it,
// answer links filled in. A task p may not run the command on answers as a
// missing one (problem.ErrNotFound); a command the task's state refuses is a
// *StateError holding the task as it is; a repeat under key of a command
// that was written answers the first reply (Replayed). maxAttempts lost
// races in a row end in problem.ErrUnavailable, as an unreachable store does.
func (s *Service) Run(ctx context.Context, p authz.Principal, id string, cmd Command, key idem.Key) (idem.Reply, error) {
	reply, err := s.run(ctx, p, id, cmd, key)
	if err != nil {
		var state *StateError
		if errors.As(err, &state) {
			s.links.ShowTask(&state.Task)
		}
		return idem.Reply{}, err
	}
	reply.JSON = s.links.Task(reply.JSON)
	return reply, nil
}

// run is Run for callers in this package that decide on the task it
// answers (answer pages, sign-in results, cancel-and-wait): the stored form,
// without answer links, which they fill only if they show the task.
func (s *Service) run(ctx context.Context, p authz.Principal, id string, cmd Command, key idem.Key) (idem.Reply, error) {
	return s.runWith(ctx, p, id, cmd, key, nil)
}

// runWith decides a command on the cached snapshot when there is one, so an
// uncontended command costs one round trip: the write is a compare-and-set
// on the revision, so a stale snapshot costs a retry, never a wrong write,
// and a refusal or no-op decided on a snapshot is judged again on the stored
// task before it is answered. The sign-in attempts given are written by the
// script that writes the change, so an attempt exists only if the request
// naming it was stored.
func (s *Service) runWith(ctx context.Context, p authz.Principal, id string, cmd Command, key idem.Key,
	attempts []store.AnswerToken) (idem.Reply, error) {
	part, err := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return idem.Reply{}, problem.ErrNotFound
	}
	var tokens []store.AnswerToken
	if cmd.Kind == CmdRequireInput {
		// Made once, before Apply: a retry after a lost race reuses them.
		cmd.Requests = PrepareRequests(cmd.Requests, ids.NewRequestID)
		cmd.Requests, tokens = s.answerTokens(id, cmd.Requests)
	}
	t, raw, fromCache := s.cache.get(id)
	if !fromCache {
		if t, raw, err = s.read(ctx, p, id); err != nil {
			return idem.Reply{}, err
		}
	}
	if fromCache && !canRead(p, t) {
		// Somebody else's task answers as a missing one does: after a read.
		if _, _, err := s.read(ctx, p, id); err != nil {
			return idem.Reply{}, err
		}
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !canRun(p, t, cmd.Kind) {
			return idem.Reply{}, problem.ErrNotFound
		}
		now := s.now()
		change, err := Apply(t, cmd, now)
		if err != nil || !change.Changed {
			if fromCache { // a cached snapshot may be stale: judge again on the stored task
				if t, raw, err = s.read(ctx, p, id); err != nil {
					return idem.Reply{}, err
				}
				fromCache = false
				attempt--
				continue
			}
			if r, ok, rerr := s.store.ReplayOf(ctx, part, key); rerr != nil || ok {
				return r, rerr
			}
			if err != nil {
				s.count(cmd.Kind, err)
				var verr *problem.ValidationError
				if errors.As(err, &verr) {
					return idem.Reply{}, err
				}
				return idem.Reply{}, &StateError{Err: err, Task: t}
			}
			s.count(cmd.Kind, nil)
			return idem.Reply{JSON: raw}, nil
		}
		next, err := json.Marshal(change.Task)
		if err != nil {
			return idem.Reply{}, err
		}
		if len(next) > s.cfg.MaxTaskBytes {
			s.count(cmd.Kind, ErrTooLarge)
			return idem.Reply{}, &TooLargeError{Size: len(next), Max: s.cfg.MaxTaskBytes}
		}
		undo, edits, err := snapdelta.UndoAndEdits(raw, next)
		if err != nil {
			return idem.Reply{}, err
		}
		evs := make([]store.TaskEvent, len(change.Events))
		for i, e := range change.Events {
			if evs[i], err = storedEvent(change.Task, now, e); err != nil {
				return idem.Reply{}, err
			}
		}
		res, err := s.store.ApplyTask(ctx, store.TaskUpdate{
			LogWrite: store.LogWrite{Partition: part, Now: now, Retention: s.cfg.MaxTTL, Idem: key},
			ID:       id, SessionID: t.SessionID, ExpectRevision: t.Revision,
			Status: string(change.Task.Status), Ends: change.Task.Status.Terminal() && !t.Status.Terminal(),
			JSON: next, Edits: edits, Undo: undo, Events: evs,
			AnswerTokens: tokens, SigninAttempts: attempts,
			ExpiresAt: expiresAt(change.Task, now, s.cfg.MaxTTL),
			Owner:     t.Owner, Executor: t.Executor, OldStatus: string(t.Status),
			WakesHere: true,
		})
		if err != nil {
			s.count(cmd.Kind, err)
			return idem.Reply{}, err
		}
		switch res.Outcome {
		case store.OK:
			rev := change.Task.Revision
			s.cache.putTask(id, next, change.Task)
			s.waiters.Notify(waits.Wake{Kind: waits.WakeTask, ID: id, SessionID: t.SessionID, Revision: rev, Snapshot: next,
				Types: change.types()})
			s.count(cmd.Kind, nil)
			if change.Task.Status != t.Status {
				s.metrics.TasksEntered.WithLabelValues(string(change.Task.Status)).Inc()
			}
			if cmd.Kind == CmdRespond {
				for _, r := range change.Task.InputResponses[len(t.InputResponses):] {
					s.metrics.Answers.WithLabelValues(r.Via, action(r.Answer)).Inc()
				}
			}
			return idem.Reply{JSON: next}, nil
		case store.Missing:
			s.cache.drop(id)
			return idem.Reply{}, problem.ErrNotFound
		case store.Conflict:
			// Decode into a fresh Task: decoding into t would keep the stale
			// snapshot's fields that the stored json omits (inputRequests,
			// statusMessage, ...).
			cur, err := decodeTask(res.Current)
			if err != nil {
				return idem.Reply{}, err
			}
			t, raw = cur, res.Current
			s.cache.putTask(id, raw, t)
			fromCache = false
			continue
		default:
			return store.Settle(res.Outcome, res.ReplayBody, "apply task")
		}
	}
	return idem.Reply{}, fmt.Errorf("%w: too much contention on task", store.ErrUnavailable)
}

func (s *Service) count(kind CommandKind, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, store.ErrUnavailable):
		outcome = "unavailable"
	case errors.Is(err, problem.ErrNotFound):
		outcome = "not_found"
	case errors.Is(err, problem.ErrRequesterNotAllowed):
		outcome = "forbidden"
	default:
		var verr *problem.ValidationError
		if errors.As(err, &verr) {
			outcome = "invalid"
		} else {
			outcome = "refused"
		}
	}
	s.metrics.TaskCommands.WithLabelValues(string(kind), outcome).Inc()
}

// Roles a list of tasks takes the caller in.
const (
	RoleOwner    = "owner"    // the tasks the caller owns (the default)
	RoleExecutor = "executor" // the tasks the caller executes
)

// ListFilter narrows GET /v1/tasks.
type ListFilter struct {
	SessionID string
	Status    Status
	Kind      string
	Role      string // RoleOwner ("" too) or RoleExecutor
}

// List pages through the caller's own tasks, or with RoleExecutor the tasks
// it executes, newest first. A filter picks an index (the session's, or the
// caller's, by status or by kind when given), so a list never reads the
// records it does not return. A session that is not the caller's answers
// exactly as one that does not exist: an empty page. cursor is the Next of
// the page before ("" for the first).
//
// The tasks a principal executes are those it owns and executes (in its
// owner indexes) and those it executes for another owner (in its executor
// indexes, which hold only those): the list runs over both and keeps the
// ones whose executor it is.
func (s *Service) List(ctx context.Context, p authz.Principal, f ListFilter, cursor string, limit int) (paging.Page, error) {
	after, err := paging.After(cursor)
	if err != nil {
		return paging.Page{}, err
	}
	switch f.Status {
	case "", Working, InputRequired, Completed, Failed, Cancelled:
	default:
		return paging.Page{}, problem.Invalid("status", "must be working, input_required, completed, failed or cancelled")
	}
	executor := false
	switch f.Role {
	case "", RoleOwner:
	case RoleExecutor:
		executor = true
	default:
		return paging.Page{}, problem.Invalid("role", "must be owner or executor")
	}
	keys := s.store.Keys
	var indexes []string
	if f.SessionID != "" {
		part, err := ids.PartitionOf(f.SessionID, ids.SessionPrefix, s.store.Partitions)
		if err != nil {
			return paging.Page{}, nil
		}
		// The session is the owner's: its executor lists in it only the
		// tasks it executes, which the filter below keeps.
		if !executor {
			owner, err := s.store.Owner(ctx, keys.Session(part, f.SessionID))
			if err != nil || owner != p.ID {
				return paging.Page{}, err
			}
		}
		if f.Status != "" {
			indexes = []string{keys.SessionTasksByStatus(part, f.SessionID, string(f.Status))}
		} else {
			indexes = keys.SessionTaskIndexes(part, f.SessionID)
		}
	} else {
		indexes = make([]string, 0, 2*s.store.Partitions)
		for i := range s.store.Partitions {
			switch {
			case f.Status != "":
				indexes = append(indexes, keys.OwnerTasksByStatus(i, p.ID, string(f.Status)))
			case f.Kind != "" && !executor:
				indexes = append(indexes, keys.OwnerTasksByKind(i, p.ID, f.Kind))
			default:
				indexes = append(indexes, keys.OwnerTasks(i, p.ID))
			}
			if !executor {
				continue
			}
			// No kind index of the executor's: the kind is kept by the filter.
			if f.Status != "" {
				indexes = append(indexes, keys.ExecutorTasksByStatus(i, p.ID, string(f.Status)))
			} else {
				indexes = append(indexes, keys.ExecutorTasks(i, p.ID))
			}
		}
	}
	record := func(id string) string {
		part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.store.Partitions)
		return keys.Task(part, id)
	}
	page, err := s.store.ListIndexed(ctx, indexes, record, after, limit, store.ListFilter{
		Fields: []string{"owner", "status", "kind", "executor"},
		Keep: func(v []string) bool {
			who := v[0]
			if executor && v[3] != "" {
				who = v[3] // a task with no executor field is executed by its owner
			}
			return who == p.ID && (f.Status == "" || v[1] == string(f.Status)) && (f.Kind == "" || v[2] == f.Kind)
		},
	})
	for i := range page.Items {
		page.Items[i] = s.links.Task(page.Items[i])
	}
	return page, err
}

// CancelChange decides the cancellation of one stored task for a session
// being cancelled: ok is false when the task is already terminal.
func CancelChange(raw []byte, reason string, now time.Time) (store.TaskCancel, bool, error) {
	t, err := decodeTask(raw)
	if err != nil {
		return store.TaskCancel{}, false, err
	}
	change, err := Apply(t, Command{Kind: CmdCancel, Reason: reason}, now)
	if err != nil || !change.Changed {
		return store.TaskCancel{}, false, err
	}
	next, err := json.Marshal(change.Task)
	if err != nil {
		return store.TaskCancel{}, false, err
	}
	ev, err := storedEvent(change.Task, now, change.Events[0])
	if err != nil {
		return store.TaskCancel{}, false, err
	}
	undo, err := snapdelta.Undo(raw, next)
	if err != nil {
		return store.TaskCancel{}, false, err
	}
	return store.TaskCancel{ID: t.TaskID, Owner: t.Owner, Executor: t.Executor, OldStatus: string(t.Status),
		ExpectRevision: t.Revision, JSON: next, Event: ev, Undo: undo}, true, nil
}
