package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
)

// Outcome is what a write script answered.
type Outcome int

const (
	OK               Outcome = iota // applied
	Replayed                        // an idempotent repeat: ReplayBody holds the first response
	IdemConflict                    // the idempotency key was used with another body
	Conflict                        // the task moved on: Current holds it
	Missing                         // the record does not exist
	SessionMissing                  // the session does not exist for this principal
	SessionNotActive                // the session is cancelled
	AlreadyCancelled                // session cancel: the session is cancelled already
	TaskMissing                     // hook create: the task does not exist
	TaskTerminal                    // hook create: the task has ended
	Duplicate                       // hook ingest: the provider event id was seen; EventID is the first event
	Closed                          // hook ingest: the hook takes no more requests; Reason says why
	RateLimited                     // hook ingest: over the hook's rate; RetryAfter says when to come back
	TooManyGroups                   // hook read: the hook has as many consumer groups as it may
	TooManyTasks                    // task create: the session holds as many live tasks as it may
	TooManyEndpoints                // endpoint add: the record holds as many endpoints as it may
	NameTaken                       // tool put: another principal publishes a tool by that name
	DefaultTaken                    // default session create: the slot names another session; Current holds its id ("" for none)
)

// Result is the answer of a session, task or hook create, a task change or
// a step of a session cancel.
type Result struct {
	Outcome    Outcome
	EventIDs   []string
	Current    []byte
	ReplayBody []byte
}

// The answers of the session and task writes, by outcome word, as each
// script's header lists them.
var (
	parseSessionCreate = replies[Result]{
		"ok": okEvents, "replay": replayed, "idem_conflict": is(IdemConflict), "exists": idTaken,
		"default": func(r scriptReply) (Result, error) {
			return Result{Outcome: DefaultTaken, Current: []byte(r.str(1))}, nil
		},
	}.parser("session_create")
	parseTaskCreate = replies[Result]{
		"ok": okEvents, "replay": replayed, "idem_conflict": is(IdemConflict), "exists": idTaken,
		"session_not_found": is(SessionMissing), "session_not_active": is(SessionNotActive),
		"too_many_tasks": is(TooManyTasks),
	}.parser("task_create")
	parseTaskApply = replies[Result]{
		"ok": okEvents, "replay": replayed, "idem_conflict": is(IdemConflict), "not_found": is(Missing),
		"conflict": func(r scriptReply) (Result, error) {
			return Result{Outcome: Conflict, Current: []byte(r.str(1))}, nil
		},
	}.parser("task_apply")
)

// IdempotencyTTL is how long a response is kept for replay.
const IdempotencyTTL = 24 * time.Hour

// CommandTTL is how long the record of a command id the server made is
// kept: long enough for any re-run of the same script (a library re-send, a
// retry after a dropped connection) to find it, short enough to cost little.
const CommandTTL = time.Minute

// commandHash marks the record of a server-made command id to the scripts.
const commandHash = "cmd"

// idemKey returns the command record's key, hash and ttl ARGV for a script in
// partition p: the caller's idempotency key, or, without one, a command id
// made for this one write. Every run of the script for this write (the
// retry in exec included) carries the same id.
func (s *Store) idemKey(p int, idem idem.Key) (key, hash string, ttlMs int64) {
	if idem.Scope == "" {
		return s.Keys.Command(p, ids.Random(26)), commandHash, CommandTTL.Milliseconds()
	}
	return s.Keys.Idempotency(p, idem.Scope), idem.BodyHash, IdempotencyTTL.Milliseconds()
}

// taskCommandHash marks, to task_create and task_apply, a command id the
// server made that is recorded in the task record (taskFieldCommands) rather
// than in a key of its own: those scripts read and write the record anyway,
// so the record costs neither a key nor a call.
const (
	taskCommandHash   = "rec"
	taskFieldCommands = "cmd"
)

// A task record keeps, besides its json, an undo per earlier revision: the
// first ones one after another in field taskFieldUndos, each ended by a
// newline (no JSON text holds one), and any after those in a field each
// (taskFieldUndo and the revision), as every undo was kept before (see the
// prelude of store/lua). A log entry of a task event keeps the offset its
// snapshot was cut at (field eventFieldCut): see TaskEvent.
const (
	taskFieldUndo  = "u:"
	taskFieldUndos = "u"
	eventFieldCut  = "c"
)

// A task event is kept as its parts, without the JSON around them, in
// field eventFieldParts, each part ended by eventPartSep (a byte no JSON
// text holds): its type, "at", task id, revision, what comes before its
// snapshot in its data ("" for eventTaskData), and what follows the
// snapshot. See the prelude of store/lua, and storedEvent.
const (
	eventFieldParts = "p"
	eventPartSep    = "\x01"
	eventTaskData   = `{"task":`
	eventFormParts  = "p" // a task event given to a script as its parts
)

// taskFieldLog is the task record's field that keeps the task's log: its
// events' ids (see the prelude of store/lua).
const taskFieldLog = "log"

// taskCommandIDLen is the length of a command id recorded in a task record:
// it need only tell apart the few commands a task keeps the record of
// (65 random bits), where an id with a key of its own is unique in the
// whole store.
const taskCommandIDLen = 13

// taskIdem is idemKey for task_create and task_apply on the task record at
// taskKey: a caller's idempotency key as idemKey gives it, or, without one,
// the task record with taskCommandHash and a command id made for this write
// in place of the ttl. Every run of the script for this write carries the
// same id.
func (s *Store) taskIdem(p int, k idem.Key, taskKey string) (key, hash string, ttlOrID any) {
	if k.Scope == "" {
		return taskKey, taskCommandHash, ids.Random(taskCommandIDLen)
	}
	key, hash, ttl := s.idemKey(p, k)
	return key, hash, ttl
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// logMinID is the oldest stream id a log keeps when it grows.
func logMinID(now time.Time, retention time.Duration) string {
	return strconv.FormatInt(now.Add(-retention).UnixMilli(), 10)
}

// LogWrite is what every write that appends events to a log and keeps its
// answer for a repeat carries: the partition, the time of the write, how
// long the logs it appends to keep events, and the request's idempotency
// key.
type LogWrite struct {
	Partition int
	Now       time.Time
	Retention time.Duration
	Idem      idem.Key
}

// minID is the oldest stream id the logs the write appends to keep.
func (w LogWrite) minID() string { return logMinID(w.Now, w.Retention) }

// NewRecord is what a create writes of the new session or task: its id and
// json, its created event, its expiry and its notification endpoints.
type NewRecord struct {
	ID        string
	JSON      []byte
	Event     []byte
	ExpiresAt time.Time
	Endpoints NewEndpoints
}

// SessionCreate is a new session to write.
type SessionCreate struct {
	LogWrite
	NewRecord
	Owner string
	// Default makes the session the owner's default session (Partition
	// must be ids.PartitionFor(Owner)), if the owner's default session slot
	// still names Replaces ("" for none); otherwise nothing is written and
	// the outcome is DefaultTaken, with the id the slot names.
	Default  bool
	Replaces string
}

// CreateSession writes a session and its session.created event in one script.
func (s *Store) CreateSession(ctx context.Context, w SessionCreate) (Result, error) {
	p := w.Partition
	idemKey, idemHash, idemTTL := s.idemKey(p, w.Idem)
	keys := []string{
		s.Keys.Session(p, w.ID), s.Keys.SessionLog(p, w.ID), s.Keys.OwnerSessions(p, w.Owner),
		idemKey, s.Keys.Wake(p), s.Keys.Outbox(p),
	}
	if w.Default {
		keys = append(keys, s.Keys.DefaultSession(p, w.Owner))
	}
	args := []any{
		idemHash, idemTTL, w.ID, w.Owner, w.JSON, ms(w.Now),
		ms(w.ExpiresAt), w.Event, w.minID(), w.Replaces,
	}
	args = append(args, w.Endpoints.args()...)
	return s.scripts.sessionCreate.run(ctx, s, keys, args...)
}

// DefaultSession is the id the owner's default session slot names, "" for
// none; the slot is in partition ids.PartitionFor(owner).
func (s *Store) DefaultSession(ctx context.Context, owner string) (string, error) {
	id, err := s.RDB.Get(ctx, s.Keys.DefaultSession(ids.PartitionFor(owner, s.Partitions), owner)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", unavailable(err)
	}
	return id, nil
}

// TaskEvent is a task event as the logs keep it: its JSON with the task's
// snapshot cut out at Cut, the write's task JSON being that snapshot; Cut
// is 0 for an event kept whole (no event begins with its snapshot). A read
// puts the snapshot back (see parseLogReadKinds).
type TaskEvent struct {
	JSON []byte
	Cut  int
}

// args is the event as the scripts take it: the value and its form. An
// event with a snapshot cut out goes as the parts the session log keeps
// (form eventFormParts), when its head reads as a task event's; else as
// its JSON and the offset it was cut at ("" for none).
func (e TaskEvent) args() (value []byte, form string) {
	if e.Cut == 0 {
		return e.JSON, ""
	}
	if parts, ok := eventParts(e.JSON, e.Cut); ok {
		return parts, eventFormParts
	}
	return e.JSON, strconv.Itoa(e.Cut)
}

// eventParts is a task event (ev, its snapshot cut out at cut) as the
// session log keeps it in field eventFieldParts, and whether its head reads
// as a task event's: {"type":"…","at":"…","taskId":"…","revision":N,"data":
// with a type of letters, digits, dots and underscores and no quote or
// backslash in the other strings, so that storedEvent (and the prelude's
// parts_event) write the head again from them, byte for byte.
func eventParts(ev []byte, cut int) ([]byte, bool) {
	if cut > len(ev) {
		return nil, false
	}
	head := string(ev[:cut])
	var p [4]string
	for i, open := range []string{`{"type":"`, `","at":"`, `","taskId":"`} {
		rest, ok := strings.CutPrefix(head, open)
		end := strings.IndexAny(rest, `"\`)
		if !ok || end <= 0 || rest[end] != '"' {
			return nil, false
		}
		p[i], head = rest[:end], rest[end:]
	}
	if strings.Trim(p[0], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._") != "" {
		return nil, false
	}
	rest, ok := strings.CutPrefix(head, `","revision":`)
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if !ok || digits == 0 {
		return nil, false
	}
	p[3] = rest[:digits]
	data, ok := strings.CutPrefix(rest[digits:], `,"data":`)
	if !ok {
		return nil, false
	}
	if data == eventTaskData {
		data = ""
	}
	out := make([]byte, 0, len(ev)-cut+len(p[0])+len(p[1])+len(p[2])+len(p[3])+len(data)+5)
	for _, s := range []string{p[0], p[1], p[2], p[3], data} {
		out = append(append(out, s...), eventPartSep...)
	}
	return append(out, ev[cut:]...), true
}

// TaskCreate is a new task to write; NewRecord.Event is the task.created
// event with the snapshot cut out at EventCut.
type TaskCreate struct {
	LogWrite
	NewRecord
	EventCut  int
	SessionID string
	Principal string
	Admin     bool
	Requester string
	Executor  string // "" or Principal: the owner executes the task
	Kind      string // "" for none
	MaxLive   int    // most live tasks the session may hold; 0: no limit
	WakesHere bool   // the caller wakes this replica's waiters itself, with the task: the fan-in passes over the wake-up
}

// CreateTask writes the receipt: the task, its task.created event in both
// logs and the indexes, in one script.
func (s *Store) CreateTask(ctx context.Context, w TaskCreate) (Result, error) {
	if err := compactSnapshot(w.JSON); err != nil {
		return Result{}, err
	}
	p := w.Partition
	idemKey, idemHash, idemArg := s.taskIdem(p, w.Idem, s.Keys.Task(p, w.ID))
	executor := executorOr(w.Executor, w.Principal)
	keys := make([]string, 0, 14)
	keys = append(keys,
		s.Keys.Session(p, w.SessionID), s.Keys.Task(p, w.ID), s.Keys.SessionLog(p, w.SessionID), s.Keys.OwnerTasks(p, w.Principal),
		s.Keys.Wake(p), s.Keys.OwnerSessions(p, w.Principal),
		s.Keys.SessionLive(p, w.SessionID), s.Keys.OwnerTasksByStatus(p, w.Principal, wire.StatusWorking),
		s.Keys.SessionTasksByStatus(p, w.SessionID, wire.StatusWorking), s.Keys.Outbox(p))
	// As with ApplyTask, only the keys the create writes.
	if idemHash != taskCommandHash {
		keys = append(keys, idemKey)
	}
	if w.Kind != "" {
		keys = append(keys, s.Keys.OwnerTasksByKind(p, w.Principal, w.Kind))
	}
	if executor != w.Principal {
		keys = append(keys, s.Keys.ExecutorTasks(p, executor), s.Keys.ExecutorTasksByStatus(p, executor, wire.StatusWorking))
	}
	event, form := TaskEvent{JSON: w.Event, Cut: w.EventCut}.args()
	args := []any{
		idemHash, idemArg, w.Principal, flag(w.Admin), w.JSON, ms(w.Now),
		ms(w.ExpiresAt), event, w.minID(), form,
		w.MaxLive, w.Requester, w.Kind, executor,
	}
	args = append(args, w.Endpoints.args()...)
	return s.writingTask(w.WakesHere, w.ID, 1, func() (Result, error) { return s.scripts.taskCreate.run(ctx, s, keys, args...) })
}

// writingTask runs write, which writes revision rev of task id. When the
// caller wakes this replica's waiters itself (here), with the record it
// wrote, this replica's fan-in is to pass over the wake-up (ownWakes).
func (s *Store) writingTask(here bool, id string, rev int64, write func() (Result, error)) (Result, error) {
	if !here {
		return write()
	}
	s.own.expect(id, rev)
	res, err := write()
	if err != nil || res.Outcome != OK {
		s.own.take(id, rev)
	}
	return res, err
}

// TaskUpdate is one change to write, computed from ExpectRevision.
type TaskUpdate struct {
	LogWrite
	ID             string
	SessionID      string
	ExpectRevision int64
	Status         string
	Ends           bool // the change ends the task (the state machine says its status becomes terminal)
	JSON           []byte
	Edits          []byte // what takes the task at ExpectRevision to JSON (snapdelta.Edits), sent in its place when shorter
	Undo           []byte // what takes JSON back to the task at ExpectRevision (snapdelta.Undo)
	Events         []TaskEvent
	AnswerTokens   []AnswerToken // the answer tokens of the requests this change adds
	SigninAttempts []AnswerToken // the sign-in attempts this change starts, by token hash
	ExpiresAt      time.Time     // the task's expiry, when the mappings of AnswerTokens end
	Owner          string        // the task's owner, whose status indexes the change moves it between
	Executor       string        // the task's executor, whose status indexes follow too when it is not the owner
	OldStatus      string        // the status at ExpectRevision
	WakesHere      bool          // the caller wakes this replica's waiters itself, with the task: the fan-in passes over the wake-up
}

// executorOr is a task's executor, the owner when none is named.
func executorOr(executor, owner string) string {
	if executor == "" {
		return owner
	}
	return executor
}

// AnswerToken maps the hash of an input request's answer token to the
// request; Value is what AnswerByToken returns.
type AnswerToken struct {
	Hash  string
	Value []byte
}

// ApplyTask writes a change if the task is still at ExpectRevision. It
// sends the new snapshot as Edits when they are shorter, and gives
// task_apply only the keys the change writes: the status indexes
// when the status changes, the executor's when the executor is not the
// owner, an idempotency key when the caller gave one. Every key costs bytes
// on the wire, and most commands (progress, messages) move no index.
func (s *Store) ApplyTask(ctx context.Context, w TaskUpdate) (Result, error) {
	if err := compactSnapshot(w.JSON); err != nil {
		return Result{}, err
	}
	p := w.Partition
	idemKey, idemHash, idemArg := s.taskIdem(p, w.Idem, s.Keys.Task(p, w.ID))
	keys := make([]string, 0, 14+len(w.AnswerTokens)+len(w.SigninAttempts))
	keys = append(keys, s.Keys.Task(p, w.ID), s.Keys.TaskLog(p, w.ID), s.Keys.SessionLog(p, w.SessionID),
		s.Keys.Wake(p), s.Keys.Session(p, w.SessionID), s.Keys.Outbox(p))
	// task_apply sets each of these keys to its value, until the task ends:
	// answer tokens and sign-in attempts alike.
	for _, a := range w.AnswerTokens {
		keys = append(keys, s.Keys.AnswerToken(p, a.Hash))
	}
	for _, a := range w.SigninAttempts {
		keys = append(keys, s.Keys.SigninAttempt(p, a.Hash))
	}
	if idemHash != taskCommandHash {
		keys = append(keys, idemKey)
	}
	if w.OldStatus != w.Status {
		keys = append(keys, s.Keys.SessionLive(p, w.SessionID),
			s.Keys.OwnerTasksByStatus(p, w.Owner, w.OldStatus), s.Keys.OwnerTasksByStatus(p, w.Owner, w.Status),
			s.Keys.SessionTasksByStatus(p, w.SessionID, w.OldStatus), s.Keys.SessionTasksByStatus(p, w.SessionID, w.Status))
		if executor := executorOr(w.Executor, w.Owner); executor != w.Owner {
			keys = append(keys, s.Keys.ExecutorTasksByStatus(p, executor, w.OldStatus),
				s.Keys.ExecutorTasksByStatus(p, executor, w.Status))
		}
	}
	args := make([]any, 0, 10+2*len(w.Events)+len(w.AnswerTokens)+len(w.SigninAttempts))
	snapshot := w.JSON
	if len(w.Edits) > 0 && len(w.Edits) < len(w.JSON) {
		snapshot = w.Edits
	}
	args = append(args, idemHash, idemArg, w.ExpectRevision, w.Status, snapshot,
		w.minID(), w.Undo, flag(w.Ends), len(w.Events))
	for _, e := range w.Events {
		value, form := e.args()
		args = append(args, value, form)
	}
	args = append(args, ms(w.ExpiresAt))
	for _, a := range w.AnswerTokens {
		args = append(args, a.Value)
	}
	for _, a := range w.SigninAttempts {
		args = append(args, a.Value)
	}
	return s.writingTask(w.WakesHere, w.ID, w.ExpectRevision+1, func() (Result, error) { return s.scripts.taskApply.run(ctx, s, keys, args...) })
}

// AnswerByToken returns what ApplyTask stored for an answer token's hash, or
// ErrNotFound.
func (s *Store) AnswerByToken(ctx context.Context, p int, tokenHash string) ([]byte, error) {
	b, err := s.RDB.Get(ctx, s.Keys.AnswerToken(p, tokenHash)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return b, nil
}

// ClaimIdempotency binds the key to its body hash for the key's life, in the
// partition the scope itself names. A create whose body picks the partition
// of its record (a task goes where its session is) calls it first: a repeat
// with another body would look for the record in another partition and find
// none. ok is false when the key is bound to another body already.
func (s *Store) ClaimIdempotency(ctx context.Context, idem idem.Key) (ok bool, err error) {
	if idem.Scope == "" {
		return true, nil
	}
	key := s.Keys.IdempotencyClaim(ids.PartitionFor(idem.Scope, s.Partitions), idem.Scope)
	set, err := s.RDB.SetNX(ctx, key, idem.BodyHash, IdempotencyTTL).Result()
	if err != nil {
		return false, unavailable(err)
	}
	if set {
		return true, nil
	}
	h, err := s.RDB.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) { // expired in between: the key is free again
		return s.ClaimIdempotency(ctx, idem)
	}
	if err != nil {
		return false, unavailable(err)
	}
	return h == idem.BodyHash, nil
}

// ReleaseIdempotency undoes ClaimIdempotency after the create was refused
// (nothing was stored), so the key may be used again with another body. Only
// a claim for this body is released: the same body meets the same refusal.
func (s *Store) ReleaseIdempotency(ctx context.Context, idem idem.Key) error {
	if idem.Scope == "" {
		return nil
	}
	key := s.Keys.IdempotencyClaim(ids.PartitionFor(idem.Scope, s.Partitions), idem.Scope)
	h, err := s.RDB.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && h != idem.BodyHash) {
		return nil
	}
	if err == nil {
		err = s.RDB.Del(ctx, key).Err()
	}
	return unavailable(err)
}

// Replay looks up a stored idempotent response without writing anything: for
// requests that fail validation against the current state but may repeat one
// that succeeded before.
func (s *Store) Replay(ctx context.Context, p int, idem idem.Key) (Result, bool, error) {
	if idem.Scope == "" {
		return Result{}, false, nil
	}
	rec, err := s.RDB.HMGet(ctx, s.Keys.Idempotency(p, idem.Scope), "h", "b").Result()
	if err != nil {
		return Result{}, false, unavailable(err)
	}
	h, ok := rec[0].(string)
	if !ok {
		return Result{}, false, nil
	}
	if h != idem.BodyHash {
		return Result{Outcome: IdemConflict}, true, nil
	}
	body, _ := rec[1].(string)
	return Result{Outcome: Replayed, ReplayBody: []byte(body)}, true, nil
}
