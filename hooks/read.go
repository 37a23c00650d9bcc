package hooks

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/waits"
)

// Event is one stored post, as readers see it: its receivedAt is the text
// stored when it came (events.Time's), and exactly one of its body fields
// is set, even for an empty body.
type Event = wire.HookEvent[string, *string]

// DeadLetter is an event a group gave up on after the maximum deliveries.
type DeadLetter struct {
	Event
	Group  string `json:"group"`
	DeadAt string `json:"deadAt"`
}

// Read limits.
const (
	DefaultGroup      = "default"
	DefaultConsumer   = "default"
	DefaultCount      = 10
	MaxCount          = 100
	DefaultVisibility = 30 * time.Second
	MaxVisibility     = 12 * time.Hour
	MaxWait           = 60 * time.Second
	maxNameLen        = 64
	MaxAckIDs         = 1000
)

// ReadOptions are the query of GET /v1/hooks/{id}/events. Zero values mean
// the defaults.
type ReadOptions struct {
	Group      string
	Consumer   string
	Count      int
	Wait       time.Duration
	Visibility time.Duration
}

func (o *ReadOptions) normalize() error {
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Consumer == "" {
		o.Consumer = DefaultConsumer
	}
	if !validName(o.Group) {
		return problem.Invalid("group", "must be 1 to %d letters, digits or . _ : -", maxNameLen)
	}
	if !validName(o.Consumer) {
		return problem.Invalid("consumer", "must be 1 to %d letters, digits or . _ : -", maxNameLen)
	}
	if o.Count == 0 {
		o.Count = DefaultCount
	}
	if o.Count < 1 || o.Count > MaxCount {
		return problem.Invalid("count", "must be 1 to %d", MaxCount)
	}
	if o.Visibility == 0 {
		o.Visibility = DefaultVisibility
	}
	if o.Visibility < time.Millisecond || o.Visibility > MaxVisibility {
		return problem.Invalid("visibilityMs", "must be 1 to %d", MaxVisibility.Milliseconds())
	}
	if o.Wait < 0 {
		return problem.Invalid("wait", "must not be negative")
	}
	o.Wait = min(o.Wait, MaxWait)
	return nil
}

// validName reports whether s can name a group or consumer.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// Batch is what one read delivered.
type Batch = wire.HookBatch[Event]

// Read returns the next batch for a consumer of a group: its own events
// whose visibility ran out, then the group's other consumers' events whose
// visibility ran out, then new events, and whether the hook still takes
// posts. An event's visibility is the one the read that handed it out gave.
// Each read is one script. With nothing to deliver and a wait, it waits on
// this replica's wake-ups (no Redis traffic while waiting), until a pending
// event's visibility runs out or until the hook's TTL does, and reads again.
// A closed hook gets no more events: once it has nothing to deliver and
// nothing pending in the group, the read answers at once.
func (s *Service) Read(ctx context.Context, p authz.Principal, id string, o ReadOptions) (Batch, error) {
	if err := o.normalize(); err != nil {
		return Batch{}, err
	}
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return Batch{}, problem.ErrNotFound
	}
	ref, err := s.lookup(ctx, p, id)
	if err != nil {
		return Batch{}, err
	}
	// Woken by a post to the hook or its close, and by what may close it:
	// its task changing, or, for a hook of the session only, anything in its
	// session (a wake is not filtered: the waiter keeps only the latest).
	parent := waits.WaitKey(waits.WakeSession, ref.SessionID)
	if ref.TaskID != "" {
		parent = waits.WaitKey(waits.WakeTask, ref.TaskID)
	}
	w := s.waiters.Wait(waits.WaitKey(waits.WakeHook, id), parent)
	defer w.Stop()
	deadline := s.now().Add(o.Wait)
	for {
		now := s.now()
		b, err := s.store.ReadHook(ctx, store.HookRead{
			Partition: part, ID: id, TaskID: ref.TaskID, SessionID: ref.SessionID, Principal: p.ID, Admin: p.Admin(),
			Group: o.Group, Consumer: o.Consumer, Count: o.Count, Visibility: o.Visibility,
			MaxDeliveries: s.cfg.MaxDeliveries, MaxGroups: s.cfg.MaxGroups, Now: now,
		})
		if err != nil {
			return Batch{}, err
		}
		switch b.Outcome {
		case store.OK:
		case store.Missing:
			return Batch{}, problem.ErrNotFound
		case store.TooManyGroups:
			return Batch{}, problem.Invalid("group", "the hook has %d consumer groups already", s.cfg.MaxGroups)
		default:
			return Batch{}, b.Outcome.Unexpected("read hook")
		}
		s.observeRead(b)
		out := Batch{
			Events: make([]Event, 0, len(b.Entries)), Group: o.Group, Consumer: o.Consumer, Pending: b.Pending,
			HookStatus: Open,
		}
		if b.Closed {
			out.HookStatus, out.CloseReason = Closed, b.Reason
		}
		for _, e := range b.Entries {
			out.Events = append(out.Events, eventOf(id, e))
		}
		// A closed hook with nothing pending in the group has nothing more
		// to give: no post can add to it.
		if len(out.Events) > 0 || o.Wait <= 0 || (b.Closed && b.Pending == 0) {
			return out, nil
		}
		until := deadline
		if b.NextVisible >= 0 {
			// NextVisible counts from the script's run: from now, after it.
			if next := s.now().Add(b.NextVisible + time.Millisecond); next.Before(until) {
				until = next
			}
		}
		if !b.Closed && ref.ClosesAt.After(now) {
			// Its TTL running out closes it, with no wake-up to say so.
			if closes := ref.ClosesAt.Add(time.Millisecond); closes.Before(until) {
				until = closes
			}
		}
		if _, why := w.Next(ctx, until); why == waits.Gone || (why == waits.Timeout && !until.Before(deadline)) {
			return out, nil
		}
	}
}

// hookRef is what a read needs of a hook besides its id: what it belongs to
// and when its TTL runs out. None of it changes after the hook is made, so
// replicas cache it.
type hookRef struct {
	TaskID    string
	SessionID string
	ClosesAt  time.Time
}

// lookup finds what a hook belongs to: from this replica's cache, or from
// the store (one read, once per hook and replica). Somebody else's hook
// does not exist.
func (s *Service) lookup(ctx context.Context, p authz.Principal, id string) (hookRef, error) {
	if ref, ok := s.refs.Get(id); ok {
		return ref, nil // the read script checks the owner
	}
	h, _, err := s.load(ctx, p, id)
	if err != nil {
		return hookRef{}, err
	}
	ref := hookRef{TaskID: h.TaskID, SessionID: h.SessionID, ClosesAt: h.ExpiresAt.Time}
	s.refs.Put(id, ref, nil)
	return ref, nil
}

func (s *Service) observeRead(b store.HookBatch) {
	if s.metrics == nil {
		return
	}
	s.metrics.HookPending.Observe(float64(b.Pending))
	if b.Redelivered > 0 {
		s.metrics.HookRedeliveries.Add(float64(b.Redelivered))
	}
	if b.DeadLettered > 0 {
		s.metrics.HookDeadLetters.Add(float64(b.DeadLettered))
	}
}

// AckInput is the body of POST /v1/hooks/{id}/ack.
type AckInput struct {
	Group    string   `json:"group,omitempty"`
	EventIDs []string `json:"eventIds"`
}

// Ack acknowledges events for a group: they are never delivered to it
// again. It answers how many were pending and are acknowledged now.
func (s *Service) Ack(ctx context.Context, p authz.Principal, id string, in AckInput, key idem.Key) (idem.Reply, error) {
	if in.Group == "" {
		in.Group = DefaultGroup
	}
	if !validName(in.Group) {
		return idem.Reply{}, problem.Invalid("group", "must be 1 to %d letters, digits or . _ : -", maxNameLen)
	}
	if len(in.EventIDs) == 0 || len(in.EventIDs) > MaxAckIDs {
		return idem.Reply{}, problem.Invalid("eventIds", "must hold 1 to %d event ids", MaxAckIDs)
	}
	for i, e := range in.EventIDs {
		if !ids.ValidEventID(e) {
			return idem.Reply{}, problem.Invalid("eventIds["+strconv.Itoa(i)+"]", "is not an event id")
		}
	}
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return idem.Reply{}, problem.ErrNotFound
	}
	res, err := s.store.AckHook(ctx, store.HookAck{
		Partition: part, ID: id, Principal: p.ID, Admin: p.Admin(), Group: in.Group, EventIDs: in.EventIDs, Idem: key,
	})
	if err != nil {
		return idem.Reply{}, err
	}
	if res.Outcome == store.OK {
		return idem.Reply{JSON: []byte(`{"acked":` + strconv.FormatInt(res.Acked, 10) + `}`)}, nil
	}
	return store.Settle(res.Outcome, res.ReplayBody, "ack hook")
}

// LogPage is a non-consuming page of a hook's events, with its dead letters.
type LogPage struct {
	Events          []Event      `json:"events"`
	Cursor          string       `json:"cursor"`
	DeadLetters     []DeadLetter `json:"deadLetters"`     // the newest, oldest first
	DeadLetterCount int64        `json:"deadLetterCount"` // all of them
}

// maxDeadLetters is how many dead letters a log page shows.
const maxDeadLetters = 100

// Log reads every received event after a cursor, oldest first, and the
// hook's dead letters, in one round trip. It changes nothing: no group sees
// a difference.
func (s *Service) Log(ctx context.Context, p authz.Principal, id, after string, limit int) (LogPage, error) {
	if after != "" && !ids.ValidEventID(after) {
		return LogPage{}, problem.Invalid("after", "is not an event id")
	}
	part, err := ids.PartitionOf(id, ids.HookPrefix, s.store.Partitions)
	if err != nil {
		return LogPage{}, problem.ErrNotFound
	}
	l, err := s.store.ReadHookLog(ctx, part, id, after, limit, maxDeadLetters)
	if err != nil {
		return LogPage{}, err
	}
	if l.Owner == "" || !p.CanAccess(l.Owner) {
		return LogPage{}, problem.ErrNotFound
	}
	page := LogPage{Events: make([]Event, 0, len(l.Entries)), Cursor: after, DeadLetters: make([]DeadLetter, 0, len(l.DeadLetters)),
		DeadLetterCount: l.DeadTotal}
	if page.Cursor == "" {
		page.Cursor = "0-0"
	}
	for _, e := range l.Entries {
		page.Events = append(page.Events, eventOf(id, e))
		page.Cursor = e.ID
	}
	for _, d := range l.DeadLetters {
		dl := DeadLetter{Event: eventOf(id, d.HookEntry), Group: d.Group}
		if !d.DeadAt.IsZero() {
			dl.DeadAt = events.At(d.DeadAt).String()
		}
		page.DeadLetters = append(page.DeadLetters, dl)
	}
	return page, nil
}

// eventOf renders a stored entry.
func eventOf(hookID string, e store.HookEntry) Event {
	ev := Event{
		EventID: e.ID, HookID: hookID, Seq: e.Seq, ReceivedAt: e.ReceivedAt, Method: e.Method,
		ContentType: e.ContentType, ProviderEventID: e.ProviderEventID, DeliveryCount: e.Deliveries,
		Headers: map[string]string{},
	}
	if len(e.Headers) > 0 {
		_ = json.Unmarshal(e.Headers, &ev.Headers)
	}
	body := e.Body
	if e.BodyIsBase64 {
		ev.BodyBase64 = &body
	} else {
		ev.Body = &body
	}
	return ev
}
