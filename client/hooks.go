package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"
)

// Hook statuses, and why a hook closed.
const (
	HookOpen   = "open"
	HookClosed = "closed"

	CloseReasonClosed           = "closed"
	CloseReasonExpired          = "expired"
	CloseReasonTaskTerminal     = "task_terminal"
	CloseReasonSessionCancelled = "session_cancelled"
)

// Signature schemes a hook can require of the posts it takes.
const (
	VerifyStandardWebhooks = "standard-webhooks"
	VerifyGitHub           = "github"
	VerifyStripe           = "stripe"
	VerifySlack            = "slack"
	VerifyHMACSHA256       = "hmac-sha256"
)

// Hook is a callback URL that outside systems post to, with the durable
// queue a task reads them from. It never carries the token: only
// CreateHook's answer does.
type Hook struct {
	HookID       string        `json:"hookId"`
	Status       string        `json:"status"`                // open or closed
	CloseReason  string        `json:"closeReason,omitempty"` // closed, expired, task_terminal or session_cancelled
	Owner        string        `json:"owner"`
	SessionID    string        `json:"sessionId"`
	TaskID       string        `json:"taskId,omitempty"`
	Label        string        `json:"label,omitempty"`
	CreatedAt    time.Time     `json:"createdAt"`
	ExpiresAt    time.Time     `json:"expiresAt"`
	TTLMs        int64         `json:"ttlMs"`
	ClosedAt     *time.Time    `json:"closedAt,omitempty"`
	Verify       *HookVerify   `json:"verify,omitempty"` // without its secret
	Response     *HookResponse `json:"response,omitempty"`
	DedupeHeader string        `json:"dedupeHeader,omitempty"`
}

// CreatedHook is the answer to CreateHook: the hook, its token and its
// callback URL. They are shown this once (a replay of the create with the
// same idempotency key answers without them): hand URL to the outside
// system and keep neither in logs.
type CreatedHook struct {
	Hook
	Token string `json:"token"`
	URL   string `json:"url"`
}

// HookVerify is the signature check a hook applies to every post before it
// stores anything. Secret is sent on create and never shown again.
type HookVerify struct {
	Scheme           string `json:"scheme"`             // one of the Verify* constants
	Secret           string `json:"secret,omitempty"`   // standard-webhooks: "whsec_" + base64; the others: the shared secret
	Header           string `json:"header,omitempty"`   // hmac-sha256 only: the header holding the signature
	Encoding         string `json:"encoding,omitempty"` // hmac-sha256 only: hex (the default) or base64
	ToleranceSeconds int    `json:"toleranceSeconds,omitempty"`
}

// HookResponse is a static answer the hook gives accepted posts instead of
// 202 {ok, eventId, duplicate}, for providers that want a particular one.
type HookResponse struct {
	Status      int    `json:"status,omitempty"` // 2xx; 0: 200
	Body        string `json:"body"`
	ContentType string `json:"contentType,omitempty"`
}

// CreateHookInput is the body of POST /v1/hooks. TaskID or SessionID is
// required; a task's hook closes itself when the task ends.
type CreateHookInput struct {
	TaskID       string        `json:"taskId,omitempty"`
	SessionID    string        `json:"sessionId,omitempty"`
	Label        string        `json:"label,omitempty"`
	TTLMs        *int64        `json:"ttlMs,omitempty"`
	Verify       *HookVerify   `json:"verify,omitempty"`
	Response     *HookResponse `json:"response,omitempty"`
	DedupeHeader string        `json:"dedupeHeader,omitempty"` // a header naming the provider's delivery id
}

// CreateHook makes an open hook bound to a task or a session.
func (c *Client) CreateHook(ctx context.Context, in CreateHookInput, opts ...CallOption) (*CreatedHook, error) {
	var h CreatedHook
	if _, err := c.do(ctx, http.MethodPost, "/v1/hooks", nil, in, &h, opts); err != nil {
		return nil, err
	}
	return &h, nil
}

// GetHook reads a hook, with its status as of now (a hook whose task ended
// reads as closed).
func (c *Client) GetHook(ctx context.Context, id string, opts ...CallOption) (*Hook, error) {
	var h Hook
	if _, err := c.do(ctx, http.MethodGet, hookPath(id, ""), nil, nil, &h, opts); err != nil {
		return nil, err
	}
	return &h, nil
}

// ListHooksParams narrows and pages GET /v1/hooks.
type ListHooksParams struct {
	TaskID    string
	SessionID string
	Limit     int    // 0: the server's default
	Cursor    string // NextCursor of the previous page
}

// ListHooks lists the caller's hooks, newest first.
func (c *Client) ListHooks(ctx context.Context, p ListHooksParams, opts ...CallOption) (*Page[Hook], error) {
	q := url.Values{}
	setNonEmpty(q, "taskId", p.TaskID)
	setNonEmpty(q, "sessionId", p.SessionID)
	setPaging(q, p.Limit, p.Cursor)
	var page Page[Hook]
	if _, err := c.do(ctx, http.MethodGet, "/v1/hooks", q, nil, &page, opts); err != nil {
		return nil, err
	}
	return &page, nil
}

// CloseHook closes a hook: posts get 410 hook_closed from now on, and what
// it received stays readable. Closing a closed hook is a no-op.
func (c *Client) CloseHook(ctx context.Context, id string, opts ...CallOption) (*Hook, error) {
	var h Hook
	if _, err := c.do(ctx, http.MethodPost, hookPath(id, "/close"), nil, struct{}{}, &h, opts); err != nil {
		return nil, err
	}
	return &h, nil
}

// HookEvent is one request an outside system posted to a hook.
type HookEvent struct {
	EventID         string            `json:"eventId"` // the cursor, and the id to ack
	HookID          string            `json:"hookId"`
	Seq             int64             `json:"seq"` // 1, 2, 3 ... in the order the hook stored them
	ReceivedAt      time.Time         `json:"receivedAt"`
	Method          string            `json:"method"`
	ContentType     string            `json:"contentType"`
	Headers         map[string]string `json:"headers"`              // an allowlist, lower-case names; never credentials or signatures
	Body            string            `json:"body,omitempty"`       // the body, when it is UTF-8
	BodyBase64      string            `json:"bodyBase64,omitempty"` // the body otherwise
	ProviderEventID string            `json:"providerEventId,omitempty"`
	DeliveryCount   int64             `json:"deliveryCount,omitempty"` // in reads through a group: 1 the first time
}

// Bytes returns the body as it was posted, whichever field carries it.
func (e HookEvent) Bytes() ([]byte, error) {
	if e.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(e.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("taskhook: decode the body of hook event %s: %w", e.EventID, err)
		}
		return b, nil
	}
	return []byte(e.Body), nil
}

// HookBatch is what one read of a consumer group delivered, and whether the
// hook still takes posts. A closed hook gets no more events: once a batch
// of a closed hook is empty and nothing is pending, the group has read
// everything.
type HookBatch struct {
	Events      []HookEvent `json:"events"`
	Group       string      `json:"group"`
	Consumer    string      `json:"consumer"`
	Pending     int64       `json:"pending"`               // the group's unacknowledged events, these included
	HookStatus  string      `json:"hookStatus"`            // HookOpen or HookClosed, as of this read
	CloseReason string      `json:"closeReason,omitempty"` // when closed: one of the CloseReason* constants
}

// HookReadParams is one read of a hook through a consumer group. Zero
// values mean the server's defaults.
type HookReadParams struct {
	Group      string        // default "default"; each group reads every event
	Consumer   string        // default "default"; the reader's name in the group
	Count      int           // 1-100; default 10
	Wait       time.Duration // when > 0 and nothing is ready, wait up to this long (at most 60 s)
	Visibility time.Duration // how long delivered events stay hidden before they are delivered again; default 30 s
}

// ReadHook reads the next batch for a consumer of a group: its own events
// whose visibility ran out, then events idle past the visibility taken over
// from the group's other consumers, then new ones. Every event it returns
// must be acked (AckHook) within the visibility, or it is delivered again.
// A read of a closed hook with nothing left for the group answers at once,
// whatever the wait. Hook(id).Events does all of this for you.
func (c *Client) ReadHook(ctx context.Context, id string, p HookReadParams, opts ...CallOption) (*HookBatch, error) {
	q := url.Values{}
	setNonEmpty(q, "group", p.Group)
	setNonEmpty(q, "consumer", p.Consumer)
	if p.Count > 0 {
		q.Set("count", strconv.Itoa(p.Count))
	}
	setWait(q, p.Wait)
	if p.Visibility > 0 {
		ms := (p.Visibility + time.Millisecond - 1) / time.Millisecond // at least 1
		q.Set("visibilityMs", strconv.FormatInt(int64(ms), 10))
	}
	var b HookBatch
	if _, err := c.do(ctx, http.MethodGet, hookPath(id, "/events"), q, nil, &b, opts); err != nil {
		return nil, err
	}
	return &b, nil
}

// AckHook acknowledges events for a group ("" for the default one): the
// group never gets them again. It returns how many were pending and are
// acknowledged now; acking an event twice is harmless. With no ids it does
// nothing.
func (c *Client) AckHook(ctx context.Context, id, group string, eventIDs []string, opts ...CallOption) (int, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	body := struct {
		Group    string   `json:"group,omitempty"`
		EventIDs []string `json:"eventIds"`
	}{group, eventIDs}
	var out struct {
		Acked int `json:"acked"`
	}
	if _, err := c.do(ctx, http.MethodPost, hookPath(id, "/ack"), nil, body, &out, opts); err != nil {
		return 0, err
	}
	return out.Acked, nil
}

// HookDeadLetter is an event a group gave up on after the maximum number of
// deliveries.
type HookDeadLetter struct {
	HookEvent
	Group  string    `json:"group"`
	DeadAt time.Time `json:"deadAt"`
}

// HookLogPage is a page of everything a hook received, oldest first, with
// its dead letters. Cursor is the After of the next page.
type HookLogPage struct {
	Events          []HookEvent      `json:"events"`
	Cursor          string           `json:"cursor"`
	DeadLetters     []HookDeadLetter `json:"deadLetters"`     // the newest, oldest first
	DeadLetterCount int64            `json:"deadLetterCount"` // all of them
}

// HookLog reads what a hook received after the event id after ("" for the
// start), without consuming anything: no group sees a difference.
func (c *Client) HookLog(ctx context.Context, id, after string, limit int, opts ...CallOption) (*HookLogPage, error) {
	q := url.Values{}
	setNonEmpty(q, "after", after)
	setPaging(q, limit, "")
	var page HookLogPage
	if _, err := c.do(ctx, http.MethodGet, hookPath(id, "/log"), q, nil, &page, opts); err != nil {
		return nil, err
	}
	return &page, nil
}

// PostResult is a hook's answer to a post.
type PostResult struct {
	Status int
	Header http.Header
	Body   []byte // as answered: 202 {ok, eventId, duplicate}, or the hook's static response
	// From the default 202 answer: the stored event, and whether the post
	// repeated a delivery id the hook had seen (nothing new was stored).
	EventID   string
	Duplicate bool
}

// maxPostAnswer bounds how much of a post's answer is read.
const maxPostAnswer = 1 << 20

// Post posts body to a hook's callback URL, as an outside system does: the
// URL is the credential, so no Authorization header is sent (the client's
// base URL and token are not used). header is sent as given; set
// Content-Type and any signature there. A 2xx answer is a *PostResult; any
// other is an *Error (410 hook_closed, 404 not_found, 401
// signature_invalid, 429 rate_limited ...). No error text carries the
// URL's token.
func (c *Client) Post(ctx context.Context, callbackURL string, body []byte, header http.Header) (*PostResult, error) {
	resp, err := c.postCapability(ctx, "callback", callbackURL, body, header, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPostAnswer))
	if err != nil {
		return nil, fmt.Errorf("taskhook: read the answer to a post (status %d): %w", resp.StatusCode, err)
	}
	res := &PostResult{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if resp.StatusCode == http.StatusAccepted {
		var ack struct {
			EventID   string `json:"eventId"`
			Duplicate bool   `json:"duplicate"`
		}
		if json.Unmarshal(raw, &ack) == nil {
			res.EventID, res.Duplicate = ack.EventID, ack.Duplicate
		}
	}
	return res, nil
}

// postCapability posts body to a capability URL (a hook's callback URL, a
// request's answer URL): the URL is the credential, so no Authorization
// header is sent and no error text carries the URL's token. A 2xx answer is
// returned for the caller to read and close; any other is an *Error. meta,
// when not nil, gets the answer's metadata.
func (c *Client) postCapability(ctx context.Context, what, rawURL string, body []byte, header http.Header, meta *Response) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the parse error without the URL
		}
		return nil, fmt.Errorf("taskhook: post: the %s URL is not valid: %w", what, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactCallbackURL(ue.URL)
		}
		return nil, fmt.Errorf("taskhook: %w", err)
	}
	if meta != nil {
		*meta = Response{
			Status: resp.StatusCode, Header: resp.Header,
			Replayed:  resp.Header.Get("Idempotent-Replayed") == "true",
			RequestID: resp.Header.Get("X-Request-Id"),
		}
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if token := path.Base(req.URL.Path); len(token) > 1 {
		// In case a proxy's page echoes the path: redacted in the whole
		// answer, before an excerpt of it can cut the token short.
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		redacted := *resp
		redacted.Body = io.NopCloser(bytes.NewReader(bytes.ReplaceAll(raw, []byte(token), []byte("[redacted]"))))
		return nil, c.decodeError(&redacted)
	}
	return nil, c.decodeError(resp)
}

// redactCallbackURL drops the last path segment (the token) and the query
// of a capability URL, for error texts.
func redactCallbackURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "[callback URL]"
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment, u.User = path.Dir(u.Path)+"/", "", "", "", nil
	return u.String() + "[redacted]"
}

func hookPath(id, suffix string) string { return "/v1/hooks/" + segment(id) + suffix }

// HookHandle reads one hook as an iterator. Make one with Client.Hook.
type HookHandle struct {
	c  *Client
	id string
}

// Hook returns a handle on the hook id; it makes no call.
func (c *Client) Hook(id string) *HookHandle { return &HookHandle{c: c, id: id} }

// ID is the hook's id.
func (h *HookHandle) ID() string { return h.id }

// HookEventsOptions configure Events. Zero values mean the defaults.
type HookEventsOptions struct {
	Group    string // the consumer group; default "default"
	Consumer string // this reader's name in the group; default "default". Give each worker its own.
	Count    int    // events per read, 1-100; default 10
	// Wait is how long one read waits for an event to arrive; default 30 s
	// (the server holds a read at most 60 s).
	Wait time.Duration
	// Visibility is how long a delivered event stays hidden from the group:
	// an event whose loop body has not returned within it may be delivered
	// again, to this or another reader. Default 30 s.
	Visibility time.Duration
	// MinBackoff and MaxBackoff bound the pauses after transient failures
	// (network errors, 429, 502, 503, 504): the first is MinBackoff, each
	// next one doubles, up to MaxBackoff, or longer when the server's
	// Retry-After says so. Defaults 100 ms and 5 s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Iterator defaults.
const (
	defaultHookWait       = 30 * time.Second
	defaultHookVisibility = 30 * time.Second
	defaultMinBackoff     = 100 * time.Millisecond
	defaultMaxBackoff     = 5 * time.Second
	maxRetryAfter         = 5 * time.Minute
	// exitAckTimeout bounds the acks sent as the iterator ends, which may be
	// after ctx has ended.
	exitAckTimeout = 10 * time.Second
)

// Events reads the hook through a consumer group, in order, with
// at-least-once delivery:
//
//	for ev, err := range c.Hook(id).Events(ctx, client.HookEventsOptions{Consumer: "worker-1"}) {
//		if err != nil {
//			return err // the hook is gone (404), closed and drained (410), or the token is refused
//		}
//		handle(ev) // returning from the body acks ev
//	}
//
// An event is acknowledged when the loop body returns to the iterator (it
// reaches its end or continues), and never when the body breaks, returns
// from the enclosing function, or panics: such an event is delivered again
// after the visibility, with DeliveryCount one higher. Acks are batched: the
// events the body finished are acked before the next read, when a batch
// takes longer than half the visibility, and when the iterator ends.
//
// Network errors and 429, 502, 503 and 504 answers are retried with capped
// exponential backoff (honoring Retry-After) and never yielded. Any other
// error is yielded once, and ends the iteration; so does a hook that is
// closed and has nothing left for the group: an *Error with code
// hook_closed (status 410). The iteration ends without an error when ctx
// ends.
func (h *HookHandle) Events(ctx context.Context, opts HookEventsOptions) iter.Seq2[HookEvent, error] {
	return func(yield func(HookEvent, error) bool) {
		r := newHookReader(h, opts)
		// Runs on every way out, a panicking body's included: the events the
		// body returned from are acked; the one it left is not.
		defer r.ackOnExit(ctx)
		for ctx.Err() == nil {
			if err := r.ack(ctx); err != nil {
				r.fail(ctx, yield, err)
				return
			}
			b, err := r.next(ctx)
			if err != nil {
				r.fail(ctx, yield, err)
				return
			}
			readAt := time.Now()
			for _, ev := range b.Events {
				if ctx.Err() != nil {
					return
				}
				if len(r.done) > 0 && time.Since(readAt) > r.visibility/2 {
					if err := r.ack(ctx); err != nil {
						r.fail(ctx, yield, err)
						return
					}
				}
				if !yield(ev, nil) {
					return // break: ev stays unacked
				}
				r.done = append(r.done, ev.EventID) // not reached when the body panics
			}
		}
	}
}

// hookReader is the state of one Events iteration.
type hookReader struct {
	c          *Client
	id         string
	read       HookReadParams
	visibility time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	done       []string // events the body returned from, not acked yet
}

func newHookReader(h *HookHandle, o HookEventsOptions) *hookReader {
	r := &hookReader{
		c: h.c, id: h.id,
		read:       HookReadParams{Group: o.Group, Consumer: o.Consumer, Count: o.Count, Wait: o.Wait, Visibility: o.Visibility},
		visibility: o.Visibility, minBackoff: o.MinBackoff, maxBackoff: o.MaxBackoff,
	}
	if r.read.Wait <= 0 {
		r.read.Wait = defaultHookWait
	}
	if r.visibility <= 0 {
		r.visibility = defaultHookVisibility
	}
	if r.minBackoff <= 0 {
		r.minBackoff = defaultMinBackoff
	}
	if r.maxBackoff <= 0 {
		r.maxBackoff = defaultMaxBackoff
	}
	r.maxBackoff = max(r.maxBackoff, r.minBackoff)
	return r
}

// next reads the next batch, waiting for one. The read says whether the
// hook is closed, decided with the batch itself: a closed hook gets no more
// events, so a batch that says closed, brings nothing and leaves nothing
// pending in the group (nothing to ack, here or elsewhere) ends the
// iteration. Called after ack, so the body's finished events are acked.
func (r *hookReader) next(ctx context.Context) (*HookBatch, error) {
	b, err := r.readBatch(ctx, r.read)
	if err != nil || b.HookStatus != HookClosed || len(b.Events) > 0 || b.Pending > 0 || len(r.done) > 0 {
		return b, err
	}
	group := r.read.Group
	if group == "" {
		group = "default"
	}
	return nil, &Error{
		Status: http.StatusGone, Code: CodeHookClosed,
		Message: fmt.Sprintf("hook %s is closed (%s) and group %s has read every event", r.id, b.CloseReason, group),
	}
}

func (r *hookReader) readBatch(ctx context.Context, p HookReadParams) (*HookBatch, error) {
	var b *HookBatch
	err := r.retry(ctx, func(ctx context.Context) (err error) {
		b, err = r.c.ReadHook(ctx, r.id, p)
		return err
	})
	return b, err
}

// ack acknowledges the events the body finished.
func (r *hookReader) ack(ctx context.Context) error {
	if len(r.done) == 0 {
		return nil
	}
	err := r.retry(ctx, func(ctx context.Context) error {
		_, err := r.c.AckHook(ctx, r.id, r.read.Group, r.done)
		return err
	})
	if err == nil {
		r.done = r.done[:0]
	}
	return err
}

// ackOnExit acks what the body finished as the iteration ends, even when
// ctx has ended, within exitAckTimeout. An ack that fails here leaves the
// events to be delivered again: at least once still holds.
func (r *hookReader) ackOnExit(ctx context.Context) {
	if len(r.done) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitAckTimeout)
	defer cancel()
	_ = r.ack(ctx)
}

// fail yields a permanent error, unless ctx ended (then the iteration just
// ends).
func (r *hookReader) fail(ctx context.Context, yield func(HookEvent, error) bool, err error) {
	if ctx.Err() == nil {
		yield(HookEvent{}, err)
	}
}

// retry runs op until it succeeds, fails for good, or ctx ends, pausing
// between transient failures.
func (r *hookReader) retry(ctx context.Context, op func(context.Context) error) error {
	backoff := r.minBackoff
	for {
		err := op(ctx)
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		pause := backoff/2 + rand.N(backoff/2+1) // jitter, so that readers do not retry in step
		var e *Error
		if errors.As(err, &e) && e.RetryAfter > pause {
			pause = min(e.RetryAfter, maxRetryAfter)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, r.maxBackoff)
	}
}

// transient reports whether a failed call may succeed if tried again: no
// answer arrived (or it was cut off), or the server or a proxy said to come
// back later.
func transient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return true
	}
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
