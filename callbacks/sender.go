package callbacks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/stdwebhooks"
)

// Defaults of a SenderConfig left at zero.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 64 << 10
	DefaultUserAgent        = "taskhook"
)

// maxRetryAfter caps what an endpoint may ask for in Retry-After, so that one
// answer cannot park a message for days: the same cap as one Backoff step.
const maxRetryAfter = maxBackoffStep

// maxMessageIDLen is what a receiver following the Standard Webhooks way
// reads of webhook-id at most; a longer id would be refused on arrival.
const maxMessageIDLen = 1 << 10

// SenderConfig configures a Sender. The zero value of each field means its
// default.
type SenderConfig struct {
	// Timeout bounds one delivery, from dialling to the last byte of the
	// answer read; default 10s.
	Timeout time.Duration
	// Guard is checked on every address dialled.
	Guard netguard.Guard
	// MaxResponseBytes is how much of an answer's body is read (and
	// discarded) at most; default 64 KiB.
	MaxResponseBytes int64
	// UserAgent is sent with every delivery; default "taskhook".
	UserAgent string
}

func (c SenderConfig) withDefaults() SenderConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// Sender makes single deliveries: one signed POST, one Outcome. It never
// retries by itself; whoever holds the outbox decides when to try again. A
// Sender is safe for concurrent use and keeps connections to endpoints open
// between deliveries.
type Sender struct {
	cfg    SenderConfig
	client *http.Client
	now    func() time.Time
}

// NewSender returns a Sender whose HTTP client never follows a redirect,
// never goes through a proxy, and dials only addresses cfg.Guard allows.
func NewSender(cfg SenderConfig) *Sender {
	cfg = cfg.withDefaults()
	return &Sender{cfg: cfg, client: newHTTPClient(cfg), now: time.Now}
}

func newHTTPClient(cfg SenderConfig) *http.Client {
	dialer := &net.Dialer{
		Timeout:   cfg.Timeout,
		KeepAlive: 30 * time.Second,
		Control:   cfg.Guard.DialControl,
	}
	transport := &http.Transport{
		// No Proxy: a proxy from the environment would dial the target on
		// our behalf, out of the guard's sight.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    min(cfg.Timeout, 10*time.Second),
		ResponseHeaderTimeout:  cfg.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: transport,
		// A redirect is answered, not followed: following it would send the
		// signed event somewhere the agent never registered, and could lead
		// past the guard's registration check.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CloseIdleConnections closes the connections kept open between deliveries,
// for a dispatcher that stops.
func (s *Sender) CloseIdleConnections() { s.client.CloseIdleConnections() }

// Delivery is one attempt to deliver one message to one endpoint.
type Delivery struct {
	URL    string
	Secret string // the endpoint's "whsec_..." secret
	// MessageID is the webhook-id: the same on every attempt of one message,
	// so the receiver can drop repeats.
	MessageID string
	Body      []byte // the event's JSON, sent as is
	// At is the webhook-timestamp, fresh for each attempt; zero means now.
	At time.Time
	// Header holds headers sent besides the signature's (an A2A push
	// config's token); nil for none.
	Header http.Header
}

// OutcomeKind says what the outbox does next with a message.
type OutcomeKind int

const (
	// Delivered: the endpoint answered 2xx. Done.
	Delivered OutcomeKind = iota + 1
	// Retry: a 5xx, 408 or 429, a timeout or a connection error. Try again
	// after Backoff, and no sooner than RetryAfter.
	Retry
	// Dead: the endpoint is gone (404, 410), or can never be reached (its
	// URL, its secret or the address it leads to is refused). Mark it dead
	// and call it no more.
	Dead
	// Dropped: the endpoint refused this message (another 4xx), or answered
	// with a redirect, which is not followed. Count it and move on.
	Dropped
)

func (k OutcomeKind) String() string {
	switch k {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Dead:
		return "dead"
	case Dropped:
		return "dropped"
	}
	return "unknown"
}

// Outcome is the result of one delivery.
type Outcome struct {
	Kind OutcomeKind
	// Status is the HTTP status the endpoint answered, 0 when none came back.
	Status int
	// RetryAfter is what a 429 or 5xx asked for in Retry-After (seconds or
	// an HTTP date), at most an hour; 0 when it asked nothing.
	RetryAfter time.Duration
	// Reason says why in a few words, fit for a log line or an endpoint's
	// deadReason: never the secret, the body or the URL.
	Reason string
}

// Send signs d the Standard Webhooks way and POSTs it once, reading at most
// MaxResponseBytes of the answer, which it discards. It never returns an
// error: everything that can happen is an Outcome.
func (s *Sender) Send(ctx context.Context, d Delivery) Outcome {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, refused, ok := s.request(ctx, d)
	if !ok {
		return refused
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return transportOutcome(err)
	}
	defer resp.Body.Close()
	// What the endpoint says is not used; reading a little of it lets a
	// short answer end cleanly and the connection be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, s.cfg.MaxResponseBytes)
	return statusOutcome(resp, s.now())
}

// request builds the signed POST of d, or the Outcome that refuses it before
// anything is sent.
func (s *Sender) request(ctx context.Context, d Delivery) (*http.Request, Outcome, bool) {
	if _, err := netguard.ParseTarget(d.URL); err != nil {
		return nil, Outcome{Kind: Dead, Reason: "target URL not allowed"}, false
	}
	if !validMessageID(d.MessageID) {
		// The message, not the endpoint, is at fault, and no retry mends it.
		return nil, Outcome{Kind: Dropped, Reason: "message id not usable"}, false
	}
	at := d.At
	if at.IsZero() {
		at = s.now()
	}
	h, err := stdwebhooks.Headers(d.Secret, d.MessageID, at, d.Body)
	if err != nil {
		return nil, Outcome{Kind: Dead, Reason: "endpoint secret not usable"}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return nil, Outcome{Kind: Dead, Reason: "target URL not allowed"}, false
	}
	for name, values := range d.Header {
		req.Header[name] = values
	}
	for name, values := range h {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	return req, Outcome{}, true
}

// validMessageID accepts what a header can carry and a receiver will read:
// 1 to 1024 bytes of visible ASCII.
func validMessageID(id string) bool {
	if id == "" || len(id) > maxMessageIDLen {
		return false
	}
	for i := range len(id) {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// transportOutcome classifies a delivery that got no answer. Only a refusal
// by the guard is final; everything else may work next time.
func transportOutcome(err error) Outcome {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, netguard.ErrAddressNotAllowed):
		return Outcome{Kind: Dead, Reason: "target address not allowed"}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return Outcome{Kind: Retry, Reason: "timeout"}
	case errors.Is(err, context.Canceled):
		return Outcome{Kind: Retry, Reason: "cancelled"}
	case errors.As(err, &dnsErr):
		return Outcome{Kind: Retry, Reason: "host could not be resolved"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Outcome{Kind: Retry, Reason: "connection refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Outcome{Kind: Retry, Reason: "connection closed before an answer"}
	case errors.As(err, &certErr), errors.As(err, &recordErr):
		return Outcome{Kind: Retry, Reason: "TLS handshake failed"}
	default:
		return Outcome{Kind: Retry, Reason: "connection failed"}
	}
}

// statusOutcome classifies an answer by its status.
func statusOutcome(resp *http.Response, now time.Time) Outcome {
	code := resp.StatusCode
	o := Outcome{Status: code}
	switch {
	case code >= 200 && code <= 299:
		o.Kind, o.Reason = Delivered, "delivered"
	case code >= 300 && code <= 399:
		o.Kind, o.Reason = Dropped, "redirect not followed"
	case code == http.StatusNotFound || code == http.StatusGone:
		o.Kind, o.Reason = Dead, "endpoint gone"
	case code == http.StatusRequestTimeout:
		o.Kind, o.Reason = Retry, "endpoint timed out"
	case code == http.StatusTooManyRequests:
		o.Kind, o.Reason = Retry, "rate limited"
		o.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	case code >= 400 && code <= 499:
		o.Kind, o.Reason = Dropped, "refused by endpoint"
	case code >= 500 && code <= 599:
		o.Kind, o.Reason = Retry, "endpoint error"
		o.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	default:
		o.Kind, o.Reason = Dropped, "unexpected status"
	}
	o.Reason += " (" + strconv.Itoa(code) + ")"
	return o
}

// parseRetryAfter reads Retry-After as delay seconds or an HTTP date
// (RFC 9110, section 10.2.3). Anything else, or a date in the past, is 0;
// more than maxRetryAfter is maxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	secs, err := strconv.ParseUint(v, 10, 64)
	switch {
	case err == nil && secs <= uint64(maxRetryAfter/time.Second):
		return time.Duration(secs) * time.Second
	case err == nil, errors.Is(err, strconv.ErrRange):
		return maxRetryAfter
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(at.Sub(now), 0), maxRetryAfter)
}
