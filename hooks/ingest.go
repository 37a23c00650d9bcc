package hooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tokens"
	"github.com/taskhook/taskhook/waits"
)

// Post is one request to a hook's ingest URL (the /v1/callback/{token} route).
type Post struct {
	Method string
	Header http.Header
	Body   []byte
}

// Target is the hook a ingest token names, as Resolve found it from the
// token alone, before the request's body is read.
type Target struct {
	part   int
	hash   string
	cfg    ingestConfig
	reseal store.Reseal // the hook's config sealed again, when this resolve read it and found it due
}

// tokenEntry is what this replica keeps of a token it resolved: the hook's
// config, when the hook's TTL runs out, and why it takes no more posts once
// a refusal said so (a closed hook never opens again).
type tokenEntry struct {
	cfg      ingestConfig
	closesAt time.Time
	closed   string // a ClosedError reason; "" while the hook is taken to be open
}

// Accepted is a post the hook took: stored now, or stored before (a
// duplicate, with the first event's id). Response is the hook's configured
// static answer, if it has one.
type Accepted struct {
	EventID   string
	Duplicate bool
	Response  *Response
}

// Outcomes of a post, as the metrics count them.
const (
	outcomeStored           = "stored"
	outcomeDuplicate        = "duplicate"
	outcomeSignatureInvalid = "signature_invalid"
	outcomeClosed           = "closed"
	outcomeRateLimited      = "rate_limited"
	outcomeNotFound         = "not_found"
)

// maxStoredContentType bounds the Content-Type an event keeps.
const maxStoredContentType = 256

// Resolve finds the hook a ingest token names from the token alone, so a
// request to an unknown or dead token is answered before its body is read:
// ErrUnknownToken for no such hook, a *ClosedError for a hook this replica
// knows takes no more posts (closed, past its TTL, or refused a post
// before). It costs nothing when this replica has resolved the token before,
// and two reads otherwise. Whether the hook's task and session still take
// posts is checked by Ingest, in the same round trip as the append.
func (s *Service) Resolve(ctx context.Context, token string) (Target, error) {
	part, ok := parseToken(token, s.store.Partitions)
	if !ok {
		s.count(outcomeNotFound)
		return Target{}, ErrUnknownToken
	}
	hash := HashToken(token)
	e, reseal, err := s.resolve(ctx, part, hash)
	if err != nil {
		if errors.Is(err, ErrUnknownToken) {
			s.count(outcomeNotFound)
		}
		return Target{}, err
	}
	reason := e.closed
	if reason == "" && !e.closesAt.IsZero() && !s.now().Before(e.closesAt) {
		reason = wire.CloseReasonExpired
	}
	if reason != "" {
		s.count(outcomeClosed)
		return Target{}, &ClosedError{Reason: reason}
	}
	return Target{part: part, hash: hash, cfg: e.cfg, reseal: reseal}, nil
}

// Ingest stores a post in the queue of the hook Resolve found.
// The signature is checked here, before the store sees anything; the rest
// (the hook's state, its task's and session's, the rate limit, dedupe, the
// append and the session's hook.received event, and the sealing again of a
// secret Resolve found due) is one script, so a post whose token is cached
// costs one round trip.
func (s *Service) Ingest(ctx context.Context, t Target, in Post) (Accepted, error) {
	part, hash, cfg := t.part, t.hash, t.cfg
	if cfg.HookID == "" {
		return Accepted{}, errors.New("ingest: the target was not resolved")
	}
	now := s.now()
	if cfg.Verify != nil {
		if err := cfg.Verify.Check(in.Header, in.Body, now); err != nil {
			s.count(outcomeSignatureInvalid)
			return Accepted{}, err
		}
	}
	eventID := ProviderEventID(in.Header, in.Body, cfg.DedupeHeader)
	if key := strings.TrimSpace(in.Header.Get("Idempotency-Key")); eventID == "" && key != "" {
		eventID = boundedID("idempotency-key:" + key)
	}
	headers, err := json.Marshal(keptHeaders(in.Header, cfg))
	if err != nil {
		return Accepted{}, err
	}
	body, isBase64 := in.Body, false
	if !utf8.Valid(body) {
		body, isBase64 = []byte(base64.StdEncoding.EncodeToString(body)), true
	}
	contentType := in.Header.Get("Content-Type")
	if len(contentType) > maxStoredContentType {
		contentType = contentType[:maxStoredContentType]
	}
	received := receivedEvent(cfg, in.Method, contentType, now)
	res, err := s.store.IngestHook(ctx, store.HookIngest{
		Partition: part, HookID: cfg.HookID, TaskID: cfg.TaskID, SessionID: cfg.SessionID,
		ProviderEventID: eventID, RateInterval: s.cfg.rateInterval(), Burst: s.cfg.Burst,
		Method: in.Method, ContentType: contentType, Headers: headers, Body: body, BodyIsBase64: isBase64,
		Event: received, Now: now, ReceivedAt: events.At(now).String(), Retention: s.cfg.Retention,
		Reseal: t.reseal,
	})
	if err != nil {
		return Accepted{}, err
	}
	switch res.Outcome {
	case store.OK:
		s.count(outcomeStored)
		s.waiters.Notify(waits.Wake{Kind: waits.WakeHook, ID: cfg.HookID, SessionID: cfg.SessionID, Types: []string{wire.EventHookReceived}})
		return Accepted{EventID: res.EventID, Response: cfg.Response}, nil
	case store.Duplicate:
		s.count(outcomeDuplicate)
		return Accepted{EventID: res.EventID, Duplicate: true, Response: cfg.Response}, nil
	case store.Missing:
		s.tokens.Drop(hash, nil)
		s.count(outcomeNotFound)
		return Accepted{}, ErrUnknownToken
	case store.Closed:
		s.count(outcomeClosed)
		s.tokens.Put(hash, tokenEntry{cfg: cfg, closed: res.Reason}, nil)
		return Accepted{}, &ClosedError{Reason: res.Reason}
	case store.RateLimited:
		s.count(outcomeRateLimited)
		return Accepted{}, &RateLimitedError{RetryAfter: res.RetryAfter}
	}
	return Accepted{}, res.Outcome.Unexpected("ingest")
}

// resolve finds the hook of a token hash: from this replica's cache, or
// from the store (two reads, once per hook and replica), with the config
// to store instead of the one read when its secret is due to be sealed
// again (openConfig).
func (s *Service) resolve(ctx context.Context, part int, hash string) (tokenEntry, store.Reseal, error) {
	if e, ok := s.tokens.Get(hash); ok && tokens.SameHash(e.cfg.TokenHash, hash) {
		return e, store.Reseal{}, nil
	}
	tok, err := s.store.HookByToken(ctx, part, hash)
	if errors.Is(err, store.ErrNotFound) {
		return tokenEntry{}, store.Reseal{}, ErrUnknownToken
	}
	if err != nil {
		return tokenEntry{}, store.Reseal{}, err
	}
	cfg, reseal, err := s.openConfig(tok.Config)
	if err != nil {
		return tokenEntry{}, store.Reseal{}, err
	}
	if !tokens.SameHash(cfg.TokenHash, hash) {
		return tokenEntry{}, store.Reseal{}, ErrUnknownToken
	}
	cfg.Response = servable(cfg.Response)
	e := tokenEntry{cfg: cfg, closesAt: tok.ClosesAt}
	if !tok.Open {
		e.closed = wire.CloseReasonClosed
	}
	s.tokens.Put(hash, e, nil)
	return e, reseal, nil
}

// receivedEvent renders the session log's hook.received event, metadata
// only (never the body or headers), whole: the shape of the event is
// decided here alone. The two values only the ingest script knows, the
// event's id in the hook's queue and its seq, stand as store.FillQueueID
// and store.FillSeq, which the script replaces.
func receivedEvent(cfg ingestConfig, method, contentType string, now time.Time) []byte {
	b := make([]byte, 0, 256)
	b = events.AppendHead(b, wire.EventHookReceived, now, cfg.SessionID, cfg.TaskID, 0)
	b = append(b, `{"hookId":`...)
	b = events.AppendString(b, cfg.HookID)
	b = append(b, `,"method":`...)
	b = events.AppendString(b, method)
	b = append(b, `,"contentType":`...)
	b = events.AppendString(b, contentType)
	b = append(b, `,"eventId":"`+store.FillQueueID+`","seq":`+store.FillSeq+`}}`...)
	return b
}

func (s *Service) count(outcome string) {
	if s.metrics != nil {
		s.metrics.HookEvents.WithLabelValues(outcome).Inc()
	}
}
