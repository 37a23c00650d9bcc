// Package client is the typed Go client of taskhook: what agents, executors
// and the project's black-box tests use to drive the HTTP API.
//
// Every call takes a context; every non-2xx answer comes back as an *Error
// carrying the contract's stable error code (test it with IsCode).
//
// A call is never retried by itself, a POST least of all: a write sent
// again after an unknown outcome could be applied twice. Retry it yourself
// with the same WithIdempotencyKey after Error.RetryAfter. Only the
// iterators retry, and only what is safe to repeat: StreamTaskEvents and
// StreamSessionEvents reconnect and resume after the last event they
// delivered, and Hook(id).Events repeats its reads and its acks (acking
// twice is harmless). They retry connection errors, 502, 503, 504, and 429
// with Retry-After, nothing else, with exponential backoff and full jitter,
// never sooner than Retry-After, until their context ends.
//
// VerifyNotification and NotificationHandler are the receiving side of
// notifications: a notify endpoint written in Go.
//
// It imports api/wire and stdwebhooks only, both of which import
// nothing else of the module, never a server package, so a program that uses
// it pulls in no server code.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultTimeout bounds one HTTP exchange of the default HTTP client. A call
// that long-polls gets at least its wait plus waitGrace, whatever the HTTP
// client's own timeout.
const (
	defaultTimeout = 30 * time.Second
	waitGrace      = 15 * time.Second
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

const userAgent = "taskhook-go-client"

// Client talks to one taskhook server as one principal. It is safe for
// concurrent use.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through h (for example
// one whose transport checks every response in tests).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) {
		if h != nil {
			c.http = h
		}
	}
}

// New returns a client of the server at baseURL (scheme, host and any path
// prefix, e.g. "https://taskhook.example.com") acting with the bearer token.
// An empty token sends no Authorization header. The default HTTP client
// gives up on an exchange after 30 s; a long-poll always gets its wait plus
// 15 s, whatever the HTTP client's timeout.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		token:   token,
		http:    &http.Client{Timeout: defaultTimeout},
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithToken returns a copy of the client acting as the principal of token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// call holds the per-call options.
type call struct {
	idempotencyKey string
	requestID      string
	meta           *Response
	kinds          []string
	releaseWait    time.Duration
}

// callOf applies a call's options.
func callOf(opts []CallOption) call {
	var cl call
	for _, o := range opts {
		if o != nil {
			o(&cl)
		}
	}
	return cl
}

// CallOption configures one call.
type CallOption func(*call)

// WithIdempotencyKey sends Idempotency-Key: a repeat of the call with the same
// key and body gets the first answer again (Response.Replayed).
func WithIdempotencyKey(key string) CallOption {
	return func(c *call) { c.idempotencyKey = key }
}

// WithRequestID sends X-Request-Id; the server echoes it and logs it.
func WithRequestID(id string) CallOption {
	return func(c *call) { c.requestID = id }
}

// WithKinds makes a wait, a read or a stream of events concern only events
// of these types (?kinds=, e.g. EventTaskMessage, EventInputRequested,
// EventTaskTerminal): WaitTask answers once the task has such an event after
// the revision (or when the wait runs out), TaskEvents and SessionEvents
// answer only such events (their Cursor still moves past the others), and
// StreamTaskEvents and StreamSessionEvents yield only such events. Other
// calls do not send it.
func WithKinds(types ...string) CallOption {
	return func(c *call) { c.kinds = append(c.kinds, types...) }
}

// WithReleaseWait makes Cancel and CancelSession wait up to d (at most 60 s
// on the server) for the executors to release what they cancelled
// (?wait=): Cancel answers the task once it has ReleasedAt, CancelSession
// lists in UnreleasedTaskIDs the tasks that were not released when the
// wait ended. Other calls do not send it.
func WithReleaseWait(d time.Duration) CallOption {
	return func(c *call) { c.releaseWait = d }
}

// WithResponse fills meta with the answer's metadata, for successes and
// error answers alike (not when no answer arrived).
func WithResponse(meta *Response) CallOption {
	return func(c *call) { c.meta = meta }
}

// Response is the metadata of an answer.
type Response struct {
	Status    int
	Header    http.Header
	Replayed  bool // Idempotent-Replayed: true: the stored answer to an earlier call with the same key
	RequestID string
}

// Page is one page of a list, newest first. NextCursor is empty on the last
// page; pass it as the Cursor of the next call otherwise.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// String returns a pointer to s, for optional fields.
func String(s string) *string { return &s }

// Int64 returns a pointer to n, for optional fields.
func Int64(n int64) *int64 { return &n }

// fetch is do for the calls that answer with one JSON value: it decodes the
// answer into a new T.
func fetch[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any, opts []CallOption) (*T, error) {
	var out T
	if _, err := c.do(ctx, method, path, query, body, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// do is the one place that talks HTTP. It sends body (when not nil) as JSON,
// decodes a 2xx answer into out (when not nil) and turns any other answer
// into an *Error. It returns the status of the answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any, opts []CallOption) (int, error) {
	cl := callOf(opts)
	target := c.baseURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("taskhook: encode the body of %s %s: %w", method, path, err)
		}
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, payload)
	if err != nil {
		return 0, fmt.Errorf("taskhook: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if cl.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", cl.idempotencyKey)
	}
	if cl.requestID != "" {
		req.Header.Set("X-Request-Id", cl.requestID)
	}

	resp, err := c.httpFor(query).Do(req)
	if err != nil {
		// A *url.Error names the URL, never the headers: no token in it.
		return 0, fmt.Errorf("taskhook: %w", err)
	}
	defer drainClose(resp.Body)
	if cl.meta != nil {
		*cl.meta = Response{
			Status:    resp.StatusCode,
			Header:    resp.Header,
			Replayed:  resp.Header.Get("Idempotent-Replayed") == "true",
			RequestID: resp.Header.Get("X-Request-Id"),
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, c.decodeError(resp)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("taskhook: decode the answer to %s %s (status %d): %w",
				method, path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, nil
}

// drainClose reads what is left of an answer's body, up to 64 KiB, and
// closes it: a drained body lets the connection be reused.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

// httpFor returns the HTTP client of one call: a long-poll (a wait in the
// query) must not be cut short by the client's own timeout.
func (c *Client) httpFor(query url.Values) *http.Client {
	w := query.Get("wait")
	if w == "" || c.http.Timeout <= 0 {
		return c.http
	}
	wait, err := time.ParseDuration(w)
	if err != nil || c.http.Timeout >= wait+waitGrace {
		return c.http
	}
	hc := *c.http
	hc.Timeout = wait + waitGrace
	return &hc
}

// segment escapes one path segment. "." and ".." are escaped too, so that
// nothing on the way can read them as a step up the path.
func segment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

// setWait puts a long-poll wait in the query as a Go duration ("30s").
func setWait(q url.Values, wait time.Duration) {
	if wait > 0 {
		q.Set("wait", wait.String())
	}
}

// setKinds puts the event types of WithKinds in the query.
func setKinds(q url.Values, kinds []string) {
	if len(kinds) > 0 {
		q.Set("kinds", strings.Join(kinds, ","))
	}
}

// setPaging puts a list's limit and cursor in the query.
func setPaging(q url.Values, limit int, cursor string) {
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
}

// setNonEmpty sets q[key] when value is not empty.
func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}
