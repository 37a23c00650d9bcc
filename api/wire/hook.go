package wire

import (
	"encoding/base64"
	"fmt"
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

// CreateHook is the body of POST /v1/hooks. TaskID or SessionID is
// required; a task's hook closes itself when the task ends. V is the Go
// type of its signature check (see the package doc).
type CreateHook[V any] struct {
	TaskID       string        `json:"taskId,omitempty"`
	SessionID    string        `json:"sessionId,omitempty"`
	Label        string        `json:"label,omitempty"`
	TTLMs        *int64        `json:"ttlMs,omitempty"`
	Verify       *V            `json:"verify,omitempty"`
	Response     *HookResponse `json:"response,omitempty"`
	DedupeHeader string        `json:"dedupeHeader,omitempty"` // a header naming the provider's delivery id
}

// Hook is a callback URL that outside systems post to, with the durable
// queue a task reads them from, as the API shows it. It never carries the
// token or the verify secret: only the answer to a create (CreatedHook)
// shows the token. T is the Go type of its timestamps.
type Hook[T any] struct {
	HookID       string        `json:"hookId"`
	Status       string        `json:"status"`                // open or closed
	CloseReason  string        `json:"closeReason,omitempty"` // closed, expired, task_terminal or session_cancelled
	Owner        string        `json:"owner"`
	SessionID    string        `json:"sessionId"`
	TaskID       string        `json:"taskId,omitempty"`
	Label        string        `json:"label,omitempty"`
	CreatedAt    T             `json:"createdAt"`
	ExpiresAt    T             `json:"expiresAt"`
	TTLMs        int64         `json:"ttlMs"`
	ClosedAt     *T            `json:"closedAt,omitempty"`
	Verify       *HookVerify   `json:"verify,omitempty"` // without its secret
	Response     *HookResponse `json:"response,omitempty"`
	DedupeHeader string        `json:"dedupeHeader,omitempty"`
}

// CreatedHook is the answer to a create: the hook, its token and its
// callback URL, shown this once (a replay of the create with the same
// idempotency key answers without them).
type CreatedHook[T any] struct {
	Hook[T]
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
	Status      int    `json:"status,omitempty"` // 2xx; 0 on create: 200
	Body        string `json:"body"`
	ContentType string `json:"contentType,omitempty"`
}

// HookBody is the Go type of a hook event's two body fields: the client
// reads them as strings; the server writes pointers, so an empty UTF-8 body
// still shows as "body": "".
type HookBody interface{ string | *string }

// HookEvent is one request an outside system posted to a hook, as its
// readers see it. T is the Go type of its timestamp and B of its body
// fields (HookBody).
type HookEvent[T any, B HookBody] struct {
	EventID         string            `json:"eventId"` // the cursor, and the id to ack
	HookID          string            `json:"hookId"`
	Seq             int64             `json:"seq"` // 1, 2, 3 ... in the order the hook stored them
	ReceivedAt      T                 `json:"receivedAt"`
	Method          string            `json:"method"`
	ContentType     string            `json:"contentType"`
	Headers         map[string]string `json:"headers"`              // an allowlist, lower-case names; never credentials or signatures
	Body            B                 `json:"body,omitempty"`       // the body, when it is UTF-8
	BodyBase64      B                 `json:"bodyBase64,omitempty"` // the body otherwise
	ProviderEventID string            `json:"providerEventId,omitempty"`
	DeliveryCount   int64             `json:"deliveryCount,omitempty"` // in reads through a group: 1 the first time
}

// Bytes returns the body as it was posted, whichever field carries it.
func (e HookEvent[T, B]) Bytes() ([]byte, error) {
	if b64, ok := bodyText(e.BodyBase64); ok {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("taskhook: decode the body of hook event %s: %w", e.EventID, err)
		}
		return b, nil
	}
	body, _ := bodyText(e.Body)
	return []byte(body), nil
}

// bodyText is the text of a body field, and whether the field carries one:
// a string that is not empty, or a pointer that is not nil.
func bodyText[B HookBody](b B) (string, bool) {
	if p, ok := any(b).(*string); ok {
		if p == nil {
			return "", false
		}
		return *p, true
	}
	text, _ := any(b).(string)
	return text, text != ""
}

// HookBatch is what one read of a hook's consumer group delivered, and
// whether the hook still takes posts. E is the Go type of an event.
type HookBatch[E any] struct {
	Events      []E    `json:"events"`
	Group       string `json:"group"`
	Consumer    string `json:"consumer"`
	Pending     int64  `json:"pending"`               // the group's unacknowledged events, these included
	HookStatus  string `json:"hookStatus"`            // HookOpen or HookClosed, as of this read
	CloseReason string `json:"closeReason,omitempty"` // when closed: one of the CloseReason* constants
}
