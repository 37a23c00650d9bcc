package hooks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
)

// Callback is one request to a hook's callback URL.
type Callback struct {
	Token  string
	Method string
	Header http.Header
	Body   []byte
}

// Accepted is a callback the hook took: stored now, or stored before (a
// duplicate, with the first event's id). Response is the hook's configured
// static answer, if it has one.
type Accepted struct {
	EventID   string
	Duplicate bool
	Response  *Response
}

// Outcomes of a callback, as the metrics count them.
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

// Ingest stores a callback request in its hook's queue. The signature is
// checked here, before the store sees anything; the rest (the hook's state,
// its task's and session's, the rate limit, dedupe, the append and the
// session's hook.received event) is one script, so a callback whose token is
// cached costs one round trip.
func (s *Service) Ingest(ctx context.Context, cb Callback) (Accepted, error) {
	part, ok := parseToken(cb.Token, s.store.Partitions)
	if !ok {
		s.count(outcomeNotFound)
		return Accepted{}, ErrUnknownToken
	}
	hash := HashToken(cb.Token)
	cfg, err := s.resolve(ctx, part, hash)
	if err != nil {
		if errors.Is(err, ErrUnknownToken) {
			s.count(outcomeNotFound)
		}
		return Accepted{}, err
	}
	now := s.now()
	if cfg.Verify != nil {
		if err := cfg.Verify.Check(cb.Header, cb.Body, now); err != nil {
			s.count(outcomeSignatureInvalid)
			return Accepted{}, err
		}
	}
	eventID := ProviderEventID(cb.Header, cb.Body, cfg.DedupeHeader)
	if key := strings.TrimSpace(cb.Header.Get("Idempotency-Key")); eventID == "" && key != "" {
		eventID = boundedID("idempotency-key:" + key)
	}
	headers, err := json.Marshal(keptHeaders(cb.Header, cfg))
	if err != nil {
		return Accepted{}, err
	}
	body, isBase64 := cb.Body, false
	if !utf8.Valid(body) {
		body, isBase64 = []byte(base64.StdEncoding.EncodeToString(body)), true
	}
	contentType := cb.Header.Get("Content-Type")
	if len(contentType) > maxStoredContentType {
		contentType = contentType[:maxStoredContentType]
	}
	head, err := receivedHead(cfg, cb.Method, contentType, now)
	if err != nil {
		return Accepted{}, err
	}
	res, err := s.store.IngestHook(ctx, store.HookIngest{
		Partition: part, HookID: cfg.HookID, TaskID: cfg.TaskID, SessionID: cfg.SessionID,
		ProviderEventID: eventID, RateInterval: s.cfg.rateInterval(), Burst: s.cfg.Burst,
		Method: cb.Method, ContentType: contentType, Headers: headers, Body: body, BodyIsBase64: isBase64,
		EventHead: head, Now: now, ReceivedAt: events.At(now).String(), Retention: s.cfg.Retention,
	})
	if err != nil {
		return Accepted{}, err
	}
	switch res.Outcome {
	case store.OK:
		s.count(outcomeStored)
		s.fanin.Notify(store.Wake{Kind: "h", ID: cfg.HookID, SessionID: cfg.SessionID})
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
		return Accepted{}, &ClosedError{Reason: res.Reason}
	case store.RateLimited:
		s.count(outcomeRateLimited)
		return Accepted{}, &RateLimitedError{RetryAfter: res.RetryAfter}
	}
	return Accepted{}, fmt.Errorf("ingest: unexpected outcome %d", res.Outcome)
}

// resolve finds the hook of a token hash: from this replica's cache, or
// from the store (two reads, once per hook and replica).
func (s *Service) resolve(ctx context.Context, part int, hash string) (ingestConfig, error) {
	if cfg, ok := s.tokens.Get(hash); ok && store.SameHash(cfg.TokenHash, hash) {
		return cfg, nil
	}
	_, raw, err := s.store.HookByToken(ctx, part, hash)
	if errors.Is(err, store.ErrNotFound) {
		return ingestConfig{}, ErrUnknownToken
	}
	if err != nil {
		return ingestConfig{}, err
	}
	var cfg ingestConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return ingestConfig{}, fmt.Errorf("decode hook config: %w", err)
	}
	if !store.SameHash(cfg.TokenHash, hash) {
		return ingestConfig{}, ErrUnknownToken
	}
	s.tokens.Put(hash, cfg, nil)
	return cfg, nil
}

// receivedHead renders the hook.received event for the session log without
// its last data members: the ingest script appends the event id and seq it
// assigns. It carries metadata only, never the body or headers.
func receivedHead(cfg ingestConfig, method, contentType string, now time.Time) ([]byte, error) {
	data, err := json.Marshal(struct {
		HookID      string `json:"hookId"`
		Method      string `json:"method"`
		ContentType string `json:"contentType"`
	}{cfg.HookID, method, contentType})
	if err != nil {
		return nil, err
	}
	ev, err := json.Marshal(events.Event{
		Type: events.HookReceived, At: events.At(now), SessionID: cfg.SessionID, TaskID: cfg.TaskID, Data: data,
	})
	if err != nil {
		return nil, err
	}
	if len(ev) < 2 || string(ev[len(ev)-2:]) != "}}" {
		return nil, errors.New("hook.received event does not end with its data")
	}
	return append(ev[:len(ev)-2], ','), nil
}

func (s *Service) count(outcome string) {
	if s.metrics != nil {
		s.metrics.HookEvents.WithLabelValues(outcome).Inc()
	}
}
