package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

type (
	// Hook is a callback URL that outside systems post to, with the durable
	// queue a task reads them from. It never carries the token: only
	// CreateHook's answer does. Its fields:
	//
	//	HookID                   string
	//	Status                   string        // HookOpen or HookClosed
	//	CloseReason              string        // one of the CloseReason* constants
	//	Owner, SessionID, TaskID string
	//	Label                    string
	//	CreatedAt, ExpiresAt     time.Time
	//	TTLMs                    int64
	//	ClosedAt                 *time.Time
	//	Verify                   *HookVerify   // without its secret
	//	Response                 *HookResponse
	//	DedupeHeader             string        // the header naming a provider's delivery id
	Hook = wire.Hook[time.Time]
	// CreatedHook is the answer to CreateHook: the hook, its token and its
	// callback URL. They are shown this once (a replay of the create with
	// the same idempotency key answers without them): hand URL to the
	// outside system and keep neither in logs. Its fields:
	//
	//	Hook         // embedded: HookID, Status, ...
	//	Token string
	//	URL   string
	CreatedHook = wire.CreatedHook[time.Time]
	// HookVerify is the signature check a hook applies to every post before
	// it stores anything. Secret is sent on create and never shown again.
	// Its fields:
	//
	//	Scheme           string // one of the Verify* constants
	//	Secret           string // standard-webhooks: "whsec_" + base64; the others: the shared secret
	//	Header           string // hmac-sha256 only: the header holding the signature
	//	Encoding         string // hmac-sha256 only: hex (the default) or base64
	//	ToleranceSeconds int
	HookVerify = wire.HookVerify
	// HookResponse is a static answer the hook gives accepted posts instead
	// of 202 {ok, eventId, duplicate}, for providers that want a particular
	// one. Its fields:
	//
	//	Status      int    // 2xx; 0: 200
	//	Body        string
	//	ContentType string // never an active type such as HTML
	HookResponse = wire.HookResponse
)

// CreateHookInput is the body of POST /v1/hooks. TaskID or SessionID is
// required; a task's hook closes itself when the task ends. Its fields:
//
//	TaskID, SessionID string
//	Label             string
//	TTLMs             *int64        // nil: the server's default
//	Verify            *HookVerify   // checked before a post is stored
//	Response          *HookResponse // instead of 202 {ok, eventId, duplicate}
//	DedupeHeader      string        // a header naming the provider's delivery id
type CreateHookInput = wire.CreateHook[HookVerify]

// CreateHook makes an open hook bound to a task or a session.
func (c *Client) CreateHook(ctx context.Context, in CreateHookInput, opts ...CallOption) (*CreatedHook, error) {
	return fetch[CreatedHook](ctx, c, http.MethodPost, "/v1/hooks", nil, in, opts)
}

// GetHook reads a hook, with its status as of now (a hook whose task ended
// reads as closed).
func (c *Client) GetHook(ctx context.Context, id string, opts ...CallOption) (*Hook, error) {
	return fetch[Hook](ctx, c, http.MethodGet, hookPath(id, ""), nil, nil, opts)
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
	return fetch[Page[Hook]](ctx, c, http.MethodGet, "/v1/hooks", q, nil, opts)
}

// CloseHook closes a hook: posts get 410 hook_closed from now on, and what
// it received stays readable. Closing a closed hook is a no-op.
func (c *Client) CloseHook(ctx context.Context, id string, opts ...CallOption) (*Hook, error) {
	return fetch[Hook](ctx, c, http.MethodPost, hookPath(id, "/close"), nil, struct{}{}, opts)
}

// HookEvent is one request an outside system posted to a hook; its Bytes
// method returns the body as it was posted, whichever field carries it. Its
// fields:
//
//	EventID         string            // the cursor, and the id to ack
//	HookID          string
//	Seq             int64             // 1, 2, 3 ... in the order the hook stored them
//	ReceivedAt      time.Time
//	Method          string
//	ContentType     string
//	Headers         map[string]string // an allowlist, lower-case names; never credentials or signatures
//	Body            string            // the body, when it is UTF-8
//	BodyBase64      string            // the body otherwise
//	ProviderEventID string
//	DeliveryCount   int64             // in reads through a group: 1 the first time
type HookEvent = wire.HookEvent[time.Time, string]

// HookBatch is what one read of a consumer group delivered, and whether the
// hook still takes posts. A closed hook gets no more events: once a batch
// of a closed hook is empty and nothing is pending, the group has read
// everything. Its fields:
//
//	Events          []HookEvent
//	Group, Consumer string
//	Pending         int64       // the group's unacknowledged events, these included
//	HookStatus      string      // HookOpen or HookClosed, as of this read
//	CloseReason     string      // when closed
type HookBatch = wire.HookBatch[HookEvent]

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
// whose visibility ran out, then the group's other consumers' events whose
// visibility ran out, then new ones. Every event it returns must be acked
// (AckHook) within this read's visibility, or it is delivered again; a later
// read's visibility does not change it.
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
	return fetch[HookBatch](ctx, c, http.MethodGet, hookPath(id, "/events"), q, nil, opts)
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
	return fetch[HookLogPage](ctx, c, http.MethodGet, hookPath(id, "/log"), q, nil, opts)
}

func hookPath(id, suffix string) string { return "/v1/hooks/" + segment(id) + suffix }
