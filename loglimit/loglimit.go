// Package loglimit is a slog.Handler that writes a repeated message at most
// once an interval. An outage makes every background reader log the same
// failure on each retry; through this handler the first record is written
// as it is, later ones are held back and counted, and the next line written
// for that message says how many were held back and since when.
//
// It imports only the standard library.
package loglimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultInterval is how often a limited message is written at most, when
// Config.Interval is zero.
const DefaultInterval = 30 * time.Second

// The attributes added to a line written after repeats were held back.
const (
	SuppressedKey      = "suppressed"      // how many records of the message were held back
	SuppressedSinceKey = "suppressedSince" // when the first of them was
)

// Config says which records are limited, and how.
type Config struct {
	// Interval is the least time between two lines of one limited message;
	// zero: DefaultInterval.
	Interval time.Duration
	// Limits picks the records that are limited; nil limits none. Records
	// it does not pick pass untouched, however often they repeat.
	Limits func(slog.Record) bool
	// Now is the clock the interval is measured on; nil: time.Now.
	Now func() time.Time
	// Held, when set, is called once for every record held back (a metric).
	Held func()
}

// key is what makes two records "the same message".
type key struct {
	level slog.Level
	msg   string
}

// repeats is what the handler knows of one limited message.
type repeats struct {
	written time.Time // when its last line was written
	held    int       // records held back since
	since   time.Time // when the first of those was
}

// pruneAbove is the number of messages kept track of before those with
// nothing held back and a line older than the interval are forgotten
// (messages are fixed strings, so there are few).
const pruneAbove = 64

type state struct {
	cfg  Config
	mu   sync.Mutex
	seen map[key]*repeats
}

// Handler limits the records Config.Limits picks and passes the rest on.
// Handlers made from it by WithAttrs and WithGroup share its count, so a
// message counts as one wherever it is logged from.
type Handler struct {
	next  slog.Handler
	state *state
}

var _ slog.Handler = (*Handler)(nil)

// New limits the records of cfg before next writes them.
func New(next slog.Handler, cfg Config) *Handler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{next: next, state: &state{cfg: cfg, seen: map[key]*repeats{}}}
}

// Enabled is next's.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle writes r, unless it is limited and its message was written less
// than an interval ago; then it only counts it. A limited line written
// carries the time it was let through (Config.Now), the time the next
// interval counts from.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.state
	if s.cfg.Limits == nil || !s.cfg.Limits(r) {
		return h.next.Handle(ctx, r)
	}
	now := s.cfg.Now()
	held, since, write := s.admit(key{r.Level, r.Message}, now)
	if !write {
		if s.cfg.Held != nil {
			s.cfg.Held()
		}
		return nil
	}
	r.Time = now // r is this call's copy: its time is its own
	if held > 0 {
		r = r.Clone() // its attributes may share an array with the caller's
		r.AddAttrs(slog.Int(SuppressedKey, held), slog.Time(SuppressedSinceKey, since))
	}
	return h.next.Handle(ctx, r)
}

// admit decides whether a record of k is written at now, and if so how many
// were held back before it, since when.
func (s *state) admit(k key, now time.Time) (held int, since time.Time, write bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := s.seen[k]
	if rep == nil {
		if len(s.seen) >= pruneAbove {
			s.prune(now)
		}
		s.seen[k] = &repeats{written: now}
		return 0, time.Time{}, true
	}
	if now.Sub(rep.written) < s.cfg.Interval {
		if rep.held == 0 {
			rep.since = now
		}
		rep.held++
		return 0, time.Time{}, false
	}
	held, since = rep.held, rep.since
	*rep = repeats{written: now}
	return held, since, true
}

// prune forgets the messages that would be written at once anyway.
func (s *state) prune(now time.Time) {
	for k, rep := range s.seen {
		if rep.held == 0 && now.Sub(rep.written) >= s.cfg.Interval {
			delete(s.seen, k)
		}
	}
}

// WithAttrs is next's, sharing h's count.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), state: h.state}
}

// WithGroup is next's, sharing h's count.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), state: h.state}
}
