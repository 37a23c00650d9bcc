package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/paging"
)

// IngestResult is hook_ingest's answer.
type IngestResult struct {
	Outcome    Outcome       // OK, Duplicate, Missing, Closed or RateLimited
	EventID    string        // the stored (or, for a duplicate, the first) event
	Reason     string        // why the hook is closed: one of wire's CloseReason* reasons
	RetryAfter time.Duration // when a rate-limited sender may try again
}

// AckResult is hook_ack's answer.
type AckResult struct {
	Outcome    Outcome // OK, Replayed, IdemConflict or Missing
	Acked      int64   // how many events were acknowledged
	ReplayBody []byte
}

// CloseResult is hook_close's answer.
type CloseResult struct {
	Outcome    Outcome // OK, Replayed, IdemConflict or Missing
	JSON       []byte  // the hook record as stored afterwards
	ReplayBody []byte
}

// The answers of the hook writes, by outcome word.
var (
	parseHookCreate = replies[Result]{
		"ok": is(OK), "replay": replayed, "idem_conflict": is(IdemConflict), "exists": idTaken,
		"session_not_found": is(SessionMissing), "session_not_active": is(SessionNotActive),
		"task_not_found": is(TaskMissing), "task_terminal": is(TaskTerminal),
	}.parser("hook_create")
	parseHookIngest = replies[IngestResult]{
		"ok": func(r scriptReply) (IngestResult, error) { return IngestResult{Outcome: OK, EventID: r.str(1)}, nil },
		"duplicate": func(r scriptReply) (IngestResult, error) {
			return IngestResult{Outcome: Duplicate, EventID: r.str(1)}, nil
		},
		"not_found": func(scriptReply) (IngestResult, error) { return IngestResult{Outcome: Missing}, nil },
		"closed":    func(r scriptReply) (IngestResult, error) { return IngestResult{Outcome: Closed, Reason: r.str(1)}, nil },
		"rate_limited": func(r scriptReply) (IngestResult, error) {
			return IngestResult{Outcome: RateLimited, RetryAfter: time.Duration(r.int(1)) * time.Millisecond}, nil
		},
	}.parser("hook_ingest")
	parseHookAck = replies[AckResult]{
		"ok": func(r scriptReply) (AckResult, error) { return AckResult{Outcome: OK, Acked: r.int(1)}, nil },
		"replay": func(r scriptReply) (AckResult, error) {
			return AckResult{Outcome: Replayed, ReplayBody: []byte(r.str(1))}, nil
		},
		"idem_conflict": func(scriptReply) (AckResult, error) { return AckResult{Outcome: IdemConflict}, nil },
		"not_found":     func(scriptReply) (AckResult, error) { return AckResult{Outcome: Missing}, nil },
	}.parser("hook_ack")
	parseHookClose = replies[CloseResult]{
		"ok": func(r scriptReply) (CloseResult, error) { return CloseResult{Outcome: OK, JSON: []byte(r.str(1))}, nil },
		"replay": func(r scriptReply) (CloseResult, error) {
			return CloseResult{Outcome: Replayed, ReplayBody: []byte(r.str(1))}, nil
		},
		"idem_conflict": func(scriptReply) (CloseResult, error) { return CloseResult{Outcome: IdemConflict}, nil },
		"not_found":     func(scriptReply) (CloseResult, error) { return CloseResult{Outcome: Missing}, nil },
	}.parser("hook_close")
)

// Fields of a hook's hash that the services read.
const (
	hookFieldJSON   = "json"
	hookFieldConfig = "cfg"
	// hookFieldCeiling is the longest visibility a read of the hook may ask
	// for, kept when it is made. A hook without it was made by an earlier
	// version, whose reads take an event back by the visibility of the read
	// that asks, not of the read that took it (see hook_read).
	hookFieldCeiling = "vmax"
)

// HookCreate is a new hook to write.
type HookCreate struct {
	Partition int
	ID        string
	TaskID    string // "" for a hook of the session only
	SessionID string
	Principal string
	Admin     bool
	TokenHash string // hex SHA-256 of the token: the token itself is never stored
	JSON      []byte // the record as the API shows it
	Config    []byte // what ingest needs, the verify secret included; never returned
	Replay    []byte // the create response without the token, kept for idempotent repeats
	Now       time.Time
	ClosesAt  time.Time // stops taking requests
	ExpiresAt time.Time // every key of the hook is gone (the tombstone's end)
	// MaxVisibility is the longest visibility a read may ask for. Each
	// delivery's own visibility is kept against it, so it is fixed for the
	// hook's life.
	MaxVisibility time.Duration
	Idem          idem.Key
}

// CreateHook writes a hook, its token mapping and its indexes in one script.
func (s *Store) CreateHook(ctx context.Context, w HookCreate) (Result, error) {
	p := w.Partition
	idemKey, idemHash, idemTTL := s.idemKey(p, w.Idem)
	taskKey, taskIndex := s.Keys.Hook(p, w.ID), s.Keys.Hook(p, w.ID) // unread for a session hook
	if w.TaskID != "" {
		taskKey, taskIndex = s.Keys.Task(p, w.TaskID), s.Keys.TaskHooks(p, w.TaskID)
	}
	keys := []string{
		s.Keys.Hook(p, w.ID), s.Keys.HookToken(p, w.TokenHash), s.Keys.Session(p, w.SessionID), taskKey,
		s.Keys.SessionHooks(p, w.SessionID), taskIndex, s.Keys.OwnerHooks(p, w.Principal), idemKey,
		s.Keys.SessionLog(p, w.SessionID),
	}
	args := []any{
		idemHash, idemTTL, w.Principal, flag(w.Admin), w.ID, w.TaskID, w.JSON,
		w.Config, ms(w.Now), ms(w.ClosesAt), ms(w.ExpiresAt), w.Replay, w.MaxVisibility.Milliseconds(),
	}
	return s.scripts.hookCreate.run(ctx, s, keys, args...)
}

// HookToken is what a callback token hash resolves to: the hook's id and
// ingest config, which never change (so callers cache them), and the hook's
// own state as stored. Whether its task or session still takes posts is
// for the ingest script to check.
type HookToken struct {
	ID       string
	Config   []byte
	Open     bool      // not closed by its owner
	ClosesAt time.Time // when its TTL runs out (zero: not known)
}

// HookByToken resolves a token hash to its hook, or ErrNotFound.
func (s *Store) HookByToken(ctx context.Context, p int, tokenHash string) (HookToken, error) {
	id, err := s.RDB.Get(ctx, s.Keys.HookToken(p, tokenHash)).Result()
	if errors.Is(err, redis.Nil) {
		return HookToken{}, ErrNotFound
	}
	if err != nil {
		return HookToken{}, unavailable(err)
	}
	vals, err := s.RDB.HMGet(ctx, s.Keys.Hook(p, id), hookFieldConfig, "status", "exp").Result()
	if err != nil {
		return HookToken{}, unavailable(err)
	}
	cfg, ok := vals[0].(string)
	if !ok {
		return HookToken{}, ErrNotFound
	}
	status, _ := vals[1].(string)
	tok := HookToken{ID: id, Config: []byte(cfg), Open: status == wire.HookOpen}
	if exp, ok := vals[2].(string); ok {
		if ms, err := strconv.ParseInt(exp, 10, 64); err == nil {
			tok.ClosesAt = time.UnixMilli(ms)
		}
	}
	return tok, nil
}

// HookIngest is one callback request to store.
type HookIngest struct {
	Partition       int
	HookID          string
	TaskID          string // "" for a hook of the session only
	SessionID       string
	ProviderEventID string // "" when the request carries none
	RateInterval    time.Duration
	Burst           int
	Method          string
	ContentType     string
	Headers         []byte // the allowed headers, a JSON object
	Body            []byte
	BodyIsBase64    bool   // Body is base64 text (the request body was not UTF-8)
	Event           []byte // the session log's hook.received event, whole but for FillQueueID and FillSeq
	Now             time.Time
	ReceivedAt      string
	Retention       time.Duration // of the session log
	Reseal          Reseal        // the hook's config as read and sealed again, when its secret is to be (zero: not)
}

// The places in a hook.received event (HookIngest.Event) of the two values
// only the ingest script knows: the request's id in the hook's queue and
// its seq. Each is a byte no JSON text holds (a control character is
// escaped inside a string and allowed nowhere else), so the script finds
// its place and no other.
const (
	FillQueueID = "\x01"
	FillSeq     = "\x02"
)

// IngestHook stores a callback request in one script: state check, rate
// limit, dedupe, append, session event, wake-up, and the sealing again of
// the hook's secret when w.Reseal says so.
func (s *Store) IngestHook(ctx context.Context, w HookIngest) (IngestResult, error) {
	p := w.Partition
	taskKey := s.Keys.Hook(p, w.HookID) // unread for a session hook
	if w.TaskID != "" {
		taskKey = s.Keys.Task(p, w.TaskID)
	}
	cmdKey, cmdHash, cmdTTL := s.idemKey(p, idem.Key{})
	keys := []string{
		s.Keys.Hook(p, w.HookID), taskKey, s.Keys.Session(p, w.SessionID), s.Keys.HookQueue(p, w.HookID),
		s.Keys.HookDedupe(p, w.HookID), s.Keys.SessionLog(p, w.SessionID), s.Keys.Wake(p), cmdKey,
		s.Keys.Outbox(p),
	}
	bodyField := hookFieldBody
	if w.BodyIsBase64 {
		bodyField = hookFieldBodyBase64
	}
	args := []any{
		ms(w.Now), w.ProviderEventID, w.RateInterval.Milliseconds(), w.Burst, logMinID(w.Now, w.Retention),
		flag(w.TaskID != ""), cmdHash, cmdTTL, w.Event, w.Reseal.Read, w.Reseal.Sealed,
		// The queue entry's fields, after the seq the script gives it.
		hookFieldAt, w.ReceivedAt, hookFieldMethod, w.Method, hookFieldContentType, w.ContentType,
		hookFieldHeaders, w.Headers, bodyField, w.Body,
	}
	if w.ProviderEventID != "" {
		args = append(args, hookFieldProviderEventID, w.ProviderEventID)
	}
	return s.scripts.hookIngest.run(ctx, s, keys, args...)
}

// HookRecord is a hook's stored record and its owner, kept beside it.
type HookRecord struct {
	JSON  []byte
	Owner string
}

// GetHook reads a hook's record, or ErrNotFound.
func (s *Store) GetHook(ctx context.Context, p int, id string) (HookRecord, error) {
	vals, err := s.RDB.HMGet(ctx, s.Keys.Hook(p, id), hookFieldJSON, "owner").Result()
	if err != nil {
		return HookRecord{}, unavailable(err)
	}
	raw, ok := vals[0].(string)
	if !ok {
		return HookRecord{}, ErrNotFound
	}
	rec := HookRecord{JSON: []byte(raw)}
	rec.Owner, _ = vals[1].(string)
	return rec, nil
}

// HookStatus is a hook's record as a principal allowed to see it reads it,
// with whether it takes posts: decided by the hook_status script as
// hook_ingest decides it, never here.
type HookStatus struct {
	Outcome      Outcome // OK, or Missing: no such hook for this principal
	JSON         []byte
	Closed       bool
	Reason       string // why it is closed ("" while open): one of wire's CloseReason* reasons
	NeedsParents bool   // asked without its task and session, which it needs to decide: ask again with them
}

// HookAsk is a hook to read with its status.
type HookAsk struct {
	Partition int
	ID        string
	Parents   bool   // TaskID and SessionID are given; without them only the hook's own fields can decide
	TaskID    string // "" for a hook of the session only
	SessionID string
}

// HookStatuses reads hooks with their status (one script per hook) in one
// round trip.
func (s *Store) HookStatuses(ctx context.Context, principal string, admin bool, now time.Time, asks []HookAsk) ([]HookStatus, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	calls := make([]scriptCall, len(asks))
	for i, a := range asks {
		calls[i] = s.hookStatusCall(principal, admin, now, a)
	}
	return s.scripts.hookStatus.runAll(ctx, s, calls)
}

func (s *Store) hookStatusCall(principal string, admin bool, now time.Time, a HookAsk) scriptCall {
	hook := s.Keys.Hook(a.Partition, a.ID)
	task, session, parents := hook, hook, "" // any key of the slot: not read
	if a.Parents {
		session, parents = s.Keys.Session(a.Partition, a.SessionID), "session"
		if a.TaskID != "" {
			task, parents = s.Keys.Task(a.Partition, a.TaskID), "task"
		}
	}
	return scriptCall{keys: []string{hook, task, session}, args: []any{principal, flag(admin), ms(now), parents}}
}

// parseHookStatus reads hook_status's answer.
var parseHookStatus = replies[HookStatus]{
	"ok": hookStatusOK,
	"parents": func(r scriptReply) (HookStatus, error) {
		return HookStatus{Outcome: OK, JSON: []byte(r.str(1)), NeedsParents: true}, nil
	},
	"not_found": func(scriptReply) (HookStatus, error) { return HookStatus{Outcome: Missing}, nil },
}.parser("hook_status")

// hookStatusOK reads {'ok', json, status, reason}.
func hookStatusOK(r scriptReply) (HookStatus, error) {
	st := HookStatus{Outcome: OK, JSON: []byte(r.str(1)), Reason: r.str(3)}
	switch r.str(2) {
	case wire.HookOpen:
	case wire.HookClosed:
		st.Closed = true
	default:
		return HookStatus{}, fmt.Errorf("hook_status: hook status %q", r.str(2))
	}
	if st.Closed != (st.Reason != "") {
		return HookStatus{}, fmt.Errorf("hook_status: status %q with reason %q", r.str(2), st.Reason)
	}
	return st, nil
}

// HookPage is one page of a list of hooks, each with its status as far as
// the hook alone decides it (NeedsParents for the others).
type HookPage struct {
	Hooks []HookStatus
	Next  string // the cursor of the next page, "" on the last
}

// ListHooks pages through hook indexes as ListIndexed does, and reads each
// kept hook with hook_status (without its parents) where ListIndexed reads
// a record's json: in the same round trip.
func (s *Store) ListHooks(ctx context.Context, indexes []string, after *paging.Position, limit int,
	principal string, admin bool, now time.Time) (HookPage, error) {
	load := func(ctx context.Context, hookIDs []string) ([]HookStatus, []bool, error) {
		calls := make([]scriptCall, len(hookIDs))
		for i, id := range hookIDs {
			part, _ := ids.PartitionOf(id, ids.HookPrefix, s.Partitions)
			calls[i] = s.hookStatusCall(principal, admin, now, HookAsk{Partition: part, ID: id})
		}
		sts, err := s.scripts.hookStatus.runAll(ctx, s, calls)
		if err != nil {
			return nil, nil, err
		}
		found := make([]bool, len(sts))
		for i, st := range sts {
			found[i] = st.Outcome == OK // an expired hook leaves its index entry behind
		}
		return sts, found, nil
	}
	owner := ListFilter{Fields: []string{"owner"}, Keep: func(v []string) bool { return v[0] == principal }}
	hooks, next, err := listIndexed(ctx, s, indexes, s.hookKey, after, limit, owner, load)
	return HookPage{Hooks: hooks, Next: next.Cursor()}, err
}

// hookKey is the key of a hook's hash, from its id.
func (s *Store) hookKey(id string) string {
	part, _ := ids.PartitionOf(id, ids.HookPrefix, s.Partitions)
	return s.Keys.Hook(part, id)
}

// HookClose closes a hook.
type HookClose struct {
	Partition  int
	ID         string
	SessionID  string // the hook's session, for the wake-up of its waiting reads
	Principal  string
	Admin      bool
	ClosedJSON []byte // the record to store if the hook is still open
	Idem       idem.Key
}

// CloseHook closes a hook in one script and wakes the reads waiting on it;
// JSON in the result is the record as stored afterwards.
func (s *Store) CloseHook(ctx context.Context, w HookClose) (CloseResult, error) {
	idemKey, idemHash, idemTTL := s.idemKey(w.Partition, w.Idem)
	keys := []string{s.Keys.Hook(w.Partition, w.ID), idemKey, s.Keys.Wake(w.Partition)}
	args := []any{idemHash, idemTTL, w.Principal, flag(w.Admin), w.ClosedJSON, w.ID, w.SessionID}
	return s.scripts.hookClose.run(ctx, s, keys, args...)
}

// HookEntry is one stored callback request.
type HookEntry struct {
	ID              string // the stream id: the cursor and the ack id
	Deliveries      int64  // in reads through a group: 1 the first time; 0 elsewhere
	Seq             int64  // its number within the hook: 1, 2, 3 ...
	ReceivedAt      string // RFC 3339, as the ingest gave it
	Method          string
	ContentType     string
	Headers         []byte // the kept headers, a JSON object ("" for none)
	Body            string // the body, or its base64 when BodyIsBase64
	BodyIsBase64    bool
	ProviderEventID string // "" when the request carried none
}

// HookDeadLetter is an entry a group gave up on after its most deliveries.
type HookDeadLetter struct {
	HookEntry        // ID is the entry's id in the hook's queue; Deliveries how often the group got it
	Group     string // the group that gave up
	DeadAt    time.Time
}

// The fields of a hook queue entry, as hook_ingest writes them (the seq from
// the script, the others from IngestHook), and those a dead letter adds
// (hook_read). The scripts get those they write as HOOK_FIELD from luaNames.
const (
	hookFieldSeq             = "seq"
	hookFieldAt              = "at"
	hookFieldMethod          = "m"
	hookFieldContentType     = "ct"
	hookFieldHeaders         = "h"
	hookFieldBody            = "b"   // the body when it is UTF-8
	hookFieldBodyBase64      = "b64" // instead of b: the body's base64
	hookFieldProviderEventID = "pid"
	deadFieldEventID         = "eid"
	deadFieldGroup           = "grp"
	deadFieldDeliveries      = "dc"
	deadFieldAt              = "dat"
)

// hookEntry reads a queue entry's fields.
func hookEntry(id string, f map[string]string) HookEntry {
	e := HookEntry{
		ID: id, Seq: toInt(f[hookFieldSeq]), ReceivedAt: f[hookFieldAt], Method: f[hookFieldMethod],
		ContentType: f[hookFieldContentType], Headers: []byte(f[hookFieldHeaders]), Body: f[hookFieldBody],
		ProviderEventID: f[hookFieldProviderEventID],
	}
	if b64, ok := f[hookFieldBodyBase64]; ok {
		e.Body, e.BodyIsBase64 = b64, true
	}
	return e
}

// hookDeadLetter reads a dead-letter entry's fields.
func hookDeadLetter(f map[string]string) HookDeadLetter {
	d := HookDeadLetter{HookEntry: hookEntry(f[deadFieldEventID], f), Group: f[deadFieldGroup]}
	d.Deliveries = toInt(f[deadFieldDeliveries])
	if at := f[deadFieldAt]; at != "" {
		d.DeadAt = time.UnixMilli(toInt(at))
	}
	return d
}

// HookRead asks for the next batch of one consumer of a group.
type HookRead struct {
	Partition     int
	ID            string
	TaskID        string // the hook's task; "" for a hook of the session only
	SessionID     string // the hook's session
	Principal     string
	Admin         bool
	Group         string
	Consumer      string
	Count         int
	Visibility    time.Duration
	MaxDeliveries int
	MaxGroups     int
	Now           time.Time
}

// HookBatch is what one read delivered.
type HookBatch struct {
	Outcome      Outcome
	Entries      []HookEntry
	Pending      int64         // the group's unacknowledged events after the read
	DeadLettered int           // events this read moved to the dead-letter stream
	Redelivered  int           // events delivered again
	NextVisible  time.Duration // with nothing delivered: when a pending event becomes visible again; -1 for none
	Closed       bool          // the hook takes no more requests (decided as ingest decides it)
	Reason       string        // why it is closed ("" while open): one of wire's CloseReason* reasons
}

// ReadHook runs one consumer-group read in one script, which also decides
// whether the hook is still open; it never blocks.
func (s *Store) ReadHook(ctx context.Context, r HookRead) (HookBatch, error) {
	p := r.Partition
	taskKey, hasTask := s.Keys.Hook(p, r.ID), "0" // unread for a session hook
	if r.TaskID != "" {
		taskKey, hasTask = s.Keys.Task(p, r.TaskID), "1"
	}
	keys := []string{
		s.Keys.Hook(p, r.ID), s.Keys.HookQueue(p, r.ID), s.Keys.HookDead(p, r.ID), taskKey, s.Keys.Session(p, r.SessionID),
	}
	args := []any{
		r.Principal, flag(r.Admin), r.Group, r.Consumer, r.Count, r.Visibility.Milliseconds(),
		r.MaxDeliveries, ms(r.Now), r.MaxGroups, hasTask,
	}
	return s.scripts.hookRead.run(ctx, s, keys, args...)
}

// parseHookRead reads hook_read's answer.
var parseHookRead = replies[HookBatch]{
	"ok":              hookBatchOK,
	"not_found":       func(scriptReply) (HookBatch, error) { return HookBatch{Outcome: Missing}, nil },
	"too_many_groups": func(scriptReply) (HookBatch, error) { return HookBatch{Outcome: TooManyGroups}, nil },
}.parser("hook_read")

// hookBatchOK reads {'ok', pending, dead-lettered, redelivered, next visible,
// entries, status, reason}.
func hookBatchOK(reply scriptReply) (HookBatch, error) {
	if len(reply) != 8 {
		return HookBatch{}, fmt.Errorf("hook_read: its reply has %d members", len(reply))
	}
	status, _ := reply[6].(string)
	reason, _ := reply[7].(string)
	if (status != wire.HookOpen && status != wire.HookClosed) || (status == wire.HookClosed) != (reason != "") {
		return HookBatch{}, fmt.Errorf("read reply has hook status %q (%q)", status, reason)
	}
	b := HookBatch{
		Pending: toInt(reply[1]), DeadLettered: int(toInt(reply[2])), Redelivered: int(toInt(reply[3])),
		NextVisible: time.Duration(toInt(reply[4])) * time.Millisecond, Closed: status == wire.HookClosed, Reason: reason,
	}
	if b.NextVisible < 0 {
		b.NextVisible = -1
	}
	entries, _ := reply[5].([]any)
	for _, e := range entries {
		parts, ok := e.([]any)
		if !ok || len(parts) != 3 {
			return HookBatch{}, errors.New("malformed entry in read reply")
		}
		id, _ := parts[0].(string)
		fields, _ := parts[2].([]any)
		e := hookEntry(id, fieldMap(fields))
		e.Deliveries = toInt(parts[1])
		b.Entries = append(b.Entries, e)
	}
	return b, nil
}

// HookAck acknowledges events for a group.
type HookAck struct {
	Partition int
	ID        string
	Principal string
	Admin     bool
	Group     string
	EventIDs  []string
	Idem      idem.Key
}

// AckHook acknowledges events in one script.
func (s *Store) AckHook(ctx context.Context, a HookAck) (AckResult, error) {
	idemKey, idemHash, idemTTL := s.idemKey(a.Partition, a.Idem)
	keys := []string{s.Keys.Hook(a.Partition, a.ID), s.Keys.HookQueue(a.Partition, a.ID), idemKey}
	args := make([]any, 0, 5+len(a.EventIDs))
	args = append(args, idemHash, idemTTL, a.Principal, flag(a.Admin), a.Group)
	for _, id := range a.EventIDs {
		args = append(args, id)
	}
	return s.scripts.hookAck.run(ctx, s, keys, args...)
}

// HookLog is a non-consuming page of a hook's events and its dead letters.
type HookLog struct {
	Owner       string // "" when the hook does not exist
	Entries     []HookEntry
	DeadLetters []HookDeadLetter // the newest, oldest first
	DeadTotal   int64
}

// ReadHookLog reads up to limit events after the stream id after ("" for
// the beginning) and the newest deadLimit dead letters, with the hook's
// owner, in one round trip. It changes nothing.
func (s *Store) ReadHookLog(ctx context.Context, p int, id, after string, limit, deadLimit int) (HookLog, error) {
	start := "-"
	if after != "" && after != "0" && after != "0-0" {
		next, err := nextStreamID(after)
		if err != nil {
			return HookLog{}, err
		}
		start = next
	}
	pipe := s.RDB.Pipeline()
	owner := pipe.HGet(ctx, s.Keys.Hook(p, id), "owner")
	events := pipe.XRangeN(ctx, s.Keys.HookQueue(p, id), start, "+", int64(limit))
	dead := pipe.XRevRangeN(ctx, s.Keys.HookDead(p, id), "+", "-", int64(deadLimit))
	total := pipe.XLen(ctx, s.Keys.HookDead(p, id))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return HookLog{}, unavailable(err)
	}
	log := HookLog{Owner: owner.Val(), DeadTotal: total.Val()}
	for _, m := range events.Val() {
		log.Entries = append(log.Entries, hookEntry(m.ID, stringMap(m.Values)))
	}
	msgs := dead.Val()
	for i := len(msgs) - 1; i >= 0; i-- {
		log.DeadLetters = append(log.DeadLetters, hookDeadLetter(stringMap(msgs[i].Values)))
	}
	return log, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func fieldMap(flat []any) map[string]string {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		m[k] = v
	}
	return m
}

func stringMap(vals map[string]any) map[string]string {
	m := make(map[string]string, len(vals))
	for k, v := range vals {
		s, _ := v.(string)
		m[k] = s
	}
	return m
}
