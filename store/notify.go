package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/idem"
)

// Scope says whose hash holds a notification endpoint: a task's or a
// session's. The scripts write the same letters (luanames.go).
type Scope string

const (
	ScopeTask    Scope = "t"
	ScopeSession Scope = "s"
)

// The fields of an outbox entry, chosen here once (luanames.go hands them to
// the scripts).
const (
	outboxFieldEndpoint = "ep"
	outboxFieldScope    = "sc"
	outboxFieldSession  = "s"
	outboxFieldTask     = "t"
	outboxFieldEventID  = "eid"
	outboxFieldType     = "ty" // the event's type, as the script that routed it matched it
	outboxFieldEvent    = "e"
	outboxFieldAttempt  = "n"
)

// The fields of a session's or task's record that hold its notification
// endpoints: the list of their views, and each one's secret under this
// prefix and its endpoint id (luanames.go hands them to the scripts).
const (
	recordFieldEndpoints = "nfy"
	recordFieldSecret    = "sec:"
)

// EndpointByExecutor is the member of a stored endpoint that marks it as
// the task executor's (a tool's endpoint, which a call's task gets): the
// outbox routes to it, but the task's owner neither sees it, removes it
// nor counts it against the cap on endpoints.
const EndpointByExecutor = "byExecutor"

// OutboxGroup is the consumer group every replica reads the outbox through.
const OutboxGroup = "notify"

// EndpointsResult is the answer of an endpoint add or remove.
type EndpointsResult struct {
	Outcome    Outcome // OK, Replayed, IdemConflict, Missing or TooManyEndpoints
	Endpoints  []byte  // the record's endpoint list after the change
	ReplayBody []byte
}

var (
	parseNotifyAdd = replies[EndpointsResult]{
		"ok": func(r scriptReply) (EndpointsResult, error) {
			return EndpointsResult{Outcome: OK, Endpoints: []byte(r.str(1))}, nil
		},
		"replay": func(r scriptReply) (EndpointsResult, error) {
			return EndpointsResult{Outcome: Replayed, ReplayBody: []byte(r.str(1))}, nil
		},
		"idem_conflict": endpointsIs(IdemConflict), "not_found": endpointsIs(Missing),
		"too_many": endpointsIs(TooManyEndpoints),
	}.parser("notify_add")
	parseNotifyRemove = replies[EndpointsResult]{
		"ok": func(r scriptReply) (EndpointsResult, error) {
			return EndpointsResult{Outcome: OK, Endpoints: []byte(r.str(1))}, nil
		},
		"not_found": endpointsIs(Missing),
	}.parser("notify_remove")
	parseOutboxSettle = replies[bool]{
		"ok":   func(scriptReply) (bool, error) { return true, nil },
		"gone": func(scriptReply) (bool, error) { return false, nil },
	}.parser("outbox_settle")
	parseOutboxDue = replies[int]{
		"ok": func(r scriptReply) (int, error) { return int(r.int(1)), nil },
	}.parser("outbox_due")
)

func endpointsIs(o Outcome) func(scriptReply) (EndpointsResult, error) {
	return func(scriptReply) (EndpointsResult, error) { return EndpointsResult{Outcome: o}, nil }
}

// NewEndpoints are the endpoints a create registers: the record's endpoint
// list and each new endpoint's secret, and the create's response, which
// shows the secrets (kept for a repeat instead of the record).
type NewEndpoints struct {
	List     []byte   // the JSON array of endpoint views; nil for none
	Secrets  []string // endpoint id, secret, endpoint id, secret ...
	Response []byte   // nil: the record itself
}

func (n NewEndpoints) args() []any {
	out := make([]any, 0, 2+len(n.Secrets))
	out = append(out, string(n.Response), string(n.List))
	for _, s := range n.Secrets {
		out = append(out, s)
	}
	return out
}

// EndpointChange adds or removes one endpoint of the record at Key.
type EndpointChange struct {
	Partition int
	Key       string // the record: Keys.Session or Keys.Task
	Principal string
	Admin     bool
	ID        string
	View      []byte // add: the endpoint as the API shows it, without the secret
	Secret    string // add
	Max       int    // add: most endpoints the record may hold
	Idem      idem.Key
	Response  []byte // add: the answer, kept for a repeat with the same key
}

// AddEndpoint adds an endpoint to a session or a task its principal owns.
func (s *Store) AddEndpoint(ctx context.Context, c EndpointChange) (EndpointsResult, error) {
	key, hash, ttl := s.idemKey(c.Partition, c.Idem)
	return s.scripts.notifyAdd.run(ctx, s, []string{c.Key, key},
		hash, ttl, c.Principal, flag(c.Admin), c.View, c.ID, c.Secret, c.Max, c.Response)
}

// RemoveEndpoint removes an endpoint of a session or a task its principal
// owns. Outcome OK (Endpoints: the list left) or Missing.
func (s *Store) RemoveEndpoint(ctx context.Context, c EndpointChange) (EndpointsResult, error) {
	key, hash, ttl := s.idemKey(c.Partition, idem.Key{})
	return s.scripts.notifyRemove.run(ctx, s, []string{c.Key, key},
		hash, ttl, c.Principal, flag(c.Admin), c.ID)
}

// EndpointSecrets reads a record's endpoint list and every endpoint's
// secret: what a session reset carries over to the new session.
func (s *Store) EndpointSecrets(ctx context.Context, key string) (NewEndpoints, error) {
	h, err := s.RDB.HGetAll(ctx, key).Result()
	if err != nil {
		return NewEndpoints{}, unavailable(err)
	}
	out := NewEndpoints{}
	if l := h[recordFieldEndpoints]; l != "" {
		out.List = []byte(l)
	}
	for f, v := range h {
		if id, ok := strings.CutPrefix(f, recordFieldSecret); ok {
			out.Secrets = append(out.Secrets, id, v)
		}
	}
	return out, nil
}

// Target is where one outbox entry goes: the endpoint's record (list json),
// its secret and the record's owner, read together; List is nil when the
// record is gone.
type Target struct {
	List   []byte
	Secret string
	// Owner is the principal owning the session or task that holds the
	// endpoint: whose share of the deliveries the entry takes.
	Owner string
}

// Targets reads the record, secret and owner of each entry's endpoint, in
// one round trip: one HMGET for each record the entries name, however many
// of its endpoints they go to.
func (s *Store) Targets(ctx context.Context, p int, entries []OutboxEntry) ([]Target, error) {
	type recordRead struct {
		fields []string       // the endpoint list, owner, then the secret of each endpoint asked for
		at     map[string]int // endpoint id → its secret's place in fields
		vals   []any
	}
	reads := map[string]*recordRead{}
	var order []string
	for _, e := range entries {
		key := s.EndpointRecord(p, e)
		r := reads[key]
		if r == nil {
			r = &recordRead{fields: []string{recordFieldEndpoints, "owner"}, at: map[string]int{}}
			reads[key] = r
			order = append(order, key)
		}
		if _, ok := r.at[e.EndpointID]; !ok {
			r.at[e.EndpointID] = len(r.fields)
			r.fields = append(r.fields, recordFieldSecret+e.EndpointID)
		}
	}
	names := make([][]string, len(order))
	for i, key := range order {
		names[i] = reads[key].fields
	}
	vals, err := s.readRecords(ctx, order, names)
	if err != nil {
		return nil, err
	}
	for i, key := range order {
		reads[key].vals = vals[i]
	}
	out := make([]Target, len(entries))
	for i, e := range entries {
		r := reads[s.EndpointRecord(p, e)]
		v := r.vals
		if len(v) != len(r.fields) {
			continue
		}
		if l, ok := v[0].(string); ok {
			out[i].List = []byte(l)
		}
		out[i].Owner, _ = v[1].(string)
		out[i].Secret, _ = v[r.at[e.EndpointID]].(string)
	}
	return out, nil
}

// EndpointRecord is the key of the record that holds an entry's endpoint.
func (s *Store) EndpointRecord(p int, e OutboxEntry) string {
	if e.Scope == ScopeTask {
		return s.Keys.Task(p, e.TaskID)
	}
	return s.Keys.Session(p, e.SessionID)
}

// OutboxEntry is one notification to deliver: an event for one endpoint.
type OutboxEntry struct {
	ID         string // the entry's stream id
	EndpointID string
	Scope      Scope
	SessionID  string
	TaskID     string // "" for a session event
	EventID    string
	EventType  string // the event's type, as the script that routed it matched it
	Event      []byte // the event as stored (without its id)
	Attempt    int    // 1 for the first
}

// fields are the entry's stream fields as a JSON array (name, value ...),
// with the attempt number given.
func (e OutboxEntry) fields(attempt int) string {
	f := []string{
		outboxFieldEndpoint, e.EndpointID, outboxFieldScope, string(e.Scope), outboxFieldSession, e.SessionID,
		outboxFieldTask, e.TaskID, outboxFieldEventID, e.EventID, outboxFieldType, e.EventType, outboxFieldEvent, string(e.Event),
		outboxFieldAttempt, strconv.Itoa(attempt),
	}
	b, _ := json.Marshal(f)
	return string(b)
}

func parseOutboxEntry(m redis.XMessage) OutboxEntry {
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	n, _ := strconv.Atoi(str(outboxFieldAttempt))
	e := OutboxEntry{
		ID: m.ID, EndpointID: str(outboxFieldEndpoint), Scope: Scope(str(outboxFieldScope)),
		SessionID: str(outboxFieldSession), TaskID: str(outboxFieldTask), EventID: str(outboxFieldEventID),
		EventType: str(outboxFieldType), Event: []byte(str(outboxFieldEvent)), Attempt: max(n, 1),
	}
	if _, ok := m.Values[outboxFieldType]; !ok {
		// Routed by an earlier version, which did not keep the type.
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e.Event, &head)
		e.EventType = head.Type
	}
	return e
}

// EnsureOutboxGroup creates partition p's outbox and its consumer group when
// they are missing. The group starts at the beginning: settled entries are
// deleted, so the stream holds only what is still to deliver.
func (s *Store) EnsureOutboxGroup(ctx context.Context, p int) error {
	err := s.RDB.XGroupCreateMkStream(ctx, s.Keys.Outbox(p), OutboxGroup, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return unavailable(err)
	}
	return nil
}

// ReadOutbox takes up to count new entries of partition p for consumer,
// waiting up to block for one (not at all when block is 0). A missing group
// is made again (a Redis that restarted empty).
func (b *Blocking) ReadOutbox(ctx context.Context, p int, consumer string, count int, block time.Duration) ([]OutboxEntry, error) {
	s := b.s
	if block <= 0 {
		block = -1 // no BLOCK argument: BLOCK 0 would wait for ever
	}
	res, err := b.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: OutboxGroup, Consumer: consumer, Streams: []string{s.Keys.Outbox(p), ">"},
		Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if redis.HasErrorPrefix(err, "NOGROUP") {
		return nil, s.EnsureOutboxGroup(ctx, p)
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var out []OutboxEntry
	for _, st := range res {
		for _, m := range st.Messages {
			out = append(out, parseOutboxEntry(m))
		}
	}
	return out, nil
}

// ClaimOutbox takes over up to count entries of partition p that another
// consumer took more than minIdle ago and never settled (its replica died),
// looking at the pending entries from the id from on ("0-0": the first).
// Redis looks at no more than ten times count of them in one call, so the
// entries still in live replicas' hands can fill a look; next is where the
// following call goes on from, "0-0" once every pending entry was looked at.
func (s *Store) ClaimOutbox(ctx context.Context, p int, consumer string, minIdle time.Duration, from string, count int) (entries []OutboxEntry, next string, err error) {
	msgs, next, err := s.RDB.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: s.Keys.Outbox(p), Group: OutboxGroup, Consumer: consumer, MinIdle: minIdle,
		Start: cmp.Or(from, "0-0"), Count: int64(count),
	}).Result()
	if redis.HasErrorPrefix(err, "NOGROUP") {
		return nil, "0-0", s.EnsureOutboxGroup(ctx, p)
	}
	if err != nil {
		return nil, "0-0", unavailable(err)
	}
	out := make([]OutboxEntry, 0, len(msgs))
	for _, m := range msgs {
		if len(m.Values) > 0 { // an entry deleted while pending comes back empty
			out = append(out, parseOutboxEntry(m))
		}
	}
	return out, cmp.Or(next, "0-0"), nil
}

// TouchOutbox marks entries of partition p as still in consumer's hands:
// their idle time starts again, so a delivery that takes longer than the
// claim idle time is not taken over while its replica lives. An entry
// settled in between is left alone.
func (s *Store) TouchOutbox(ctx context.Context, p int, consumer string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.RDB.XClaimJustID(ctx, &redis.XClaimArgs{
		Stream: s.Keys.Outbox(p), Group: OutboxGroup, Consumer: consumer, Messages: ids,
	}).Err()
	if err != nil && !errors.Is(err, redis.Nil) && !redis.HasErrorPrefix(err, "NOGROUP") {
		return unavailable(err)
	}
	return nil
}

// Settle says how one delivery attempt ended.
type SettleKind int

const (
	SettleDone         SettleKind = iota // delivered, or dropped for good
	SettleRetry                          // try again at RetryAt
	SettleDeadLetter                     // given up: kept in the session's dead letters
	SettleEndpointDead                   // the endpoint is gone (404, 410): marked dead
)

// Settlement is the end of one attempt.
type Settlement struct {
	How        SettleKind
	RetryAt    time.Time     // SettleRetry
	Attempt    int           // SettleRetry: the attempt number the retry carries
	Reason     string        // SettleDeadLetter: the last error; SettleEndpointDead: why
	Now        time.Time     // SettleDeadLetter
	DeadLetter time.Duration // SettleDeadLetter: how long dead letters are kept
}

// SettleOutbox ends one attempt of e. It reports false when another replica
// had taken the entry over and settled it first (nothing was done).
func (s *Store) SettleOutbox(ctx context.Context, p int, e OutboxEntry, st Settlement) (bool, error) {
	keys := []string{s.Keys.Outbox(p), s.Keys.OutboxRetries(p), s.EndpointRecord(p, e), s.Keys.NotifyDeadLetters(p, e.SessionID)}
	what, at, fields, keep := "done", "", "", int64(0)
	switch st.How {
	case SettleRetry:
		what, at, fields = "retry", ms(st.RetryAt), e.fields(st.Attempt)
	case SettleDeadLetter:
		what, fields, keep = "dead_letter", e.deadLetter(st), st.DeadLetter.Milliseconds()
	case SettleEndpointDead:
		what, at = "endpoint_dead", st.Reason
	}
	return s.scripts.outboxSettle.run(ctx, s, keys, OutboxGroup, e.ID, what, at, fields, e.EndpointID, keep)
}

// The fields of a dead letter.
const (
	deadLetterEndpoint = "ep"
	deadLetterEventID  = "eid"
	deadLetterType     = "type"
	deadLetterTask     = "t"
	deadLetterAttempts = "n"
	deadLetterError    = "err"
	deadLetterAt       = "at"
)

func (e OutboxEntry) deadLetter(st Settlement) string {
	b, _ := json.Marshal([]string{
		deadLetterEndpoint, e.EndpointID, deadLetterEventID, e.EventID, deadLetterType, e.EventType,
		deadLetterTask, e.TaskID, deadLetterAttempts, strconv.Itoa(e.Attempt), deadLetterError, st.Reason,
		deadLetterAt, ms(st.Now),
	})
	return string(b)
}

// DeadLetter is one notification given up on.
type DeadLetter struct {
	ID         string
	EndpointID string
	EventID    string
	EventType  string
	TaskID     string
	Attempts   int
	LastError  string
	At         time.Time
}

// DeadLetters reads a session's dead letters after a cursor, oldest first.
func (s *Store) DeadLetters(ctx context.Context, p int, sessionID, after string, limit int) ([]DeadLetter, error) {
	start := "-"
	if after != "" {
		next, err := nextStreamID(after)
		if err != nil {
			return nil, err
		}
		start = next
	}
	msgs, err := s.RDB.XRangeN(ctx, s.Keys.NotifyDeadLetters(p, sessionID), start, "+", int64(limit)).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]DeadLetter, len(msgs))
	for i, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		n, _ := strconv.Atoi(str(deadLetterAttempts))
		at, _ := strconv.ParseInt(str(deadLetterAt), 10, 64)
		out[i] = DeadLetter{
			ID: m.ID, EndpointID: str(deadLetterEndpoint), EventID: str(deadLetterEventID),
			EventType: str(deadLetterType), TaskID: str(deadLetterTask), Attempts: n,
			LastError: str(deadLetterError), At: time.UnixMilli(at).UTC(),
		}
	}
	return out, nil
}

// MoveDueRetries puts up to limit of partition p's due retries back into its
// outbox; it returns how many it moved.
func (s *Store) MoveDueRetries(ctx context.Context, p int, now time.Time, limit int) (int, error) {
	return s.scripts.outboxDue.run(ctx, s, []string{s.Keys.OutboxRetries(p), s.Keys.Outbox(p)}, ms(now), limit)
}

// OldestUndelivered is the commit time of the oldest event partition p still
// has to deliver (in its outbox or waiting for a retry), zero when none.
func (s *Store) OldestUndelivered(ctx context.Context, p int) (time.Time, error) {
	pipe := s.RDB.Pipeline()
	first := pipe.XRangeN(ctx, s.Keys.Outbox(p), "-", "+", 1)
	retry := pipe.ZRangeWithScores(ctx, s.Keys.OutboxRetries(p), 0, 0)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return time.Time{}, unavailable(err)
	}
	var oldest time.Time
	consider := func(eventID string) {
		msPart, _, _ := strings.Cut(eventID, "-")
		if v, err := strconv.ParseInt(msPart, 10, 64); err == nil {
			if t := time.UnixMilli(v); oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
		}
	}
	for _, m := range first.Val() {
		consider(parseOutboxEntry(m).EventID)
	}
	for _, z := range retry.Val() {
		var f []string
		if m, _ := z.Member.(string); json.Unmarshal([]byte(m), &f) == nil {
			for i := 0; i+1 < len(f); i += 2 {
				if f[i] == outboxFieldEventID {
					consider(f[i+1])
				}
			}
		}
	}
	return oldest, nil
}
