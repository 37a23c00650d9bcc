package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Session is an agent's conversation: the owner scope of its tasks. Its
// fields:
//
//	SessionID                string
//	Status                   string          // SessionActive or SessionCancelled
//	Owner                    string          // the principal that opened it
//	CreatedAt, LastUpdatedAt time.Time
//	Metadata                 json.RawMessage
//	Notify                   []Endpoint      // secrets only in CreateSession's answer
type Session = wire.Session[time.Time]

// CreateSessionInput is the body of POST /v1/sessions. Its fields:
//
//	Metadata any               // an object
//	Notify   []EndpointRequest // the answer shows each one's secret, once
type CreateSessionInput = wire.CreateSession[any]

// CreateSession opens an active session owned by the caller.
func (c *Client) CreateSession(ctx context.Context, in CreateSessionInput, opts ...CallOption) (*Session, error) {
	return fetch[Session](ctx, c, http.MethodPost, "/v1/sessions", nil, in, opts)
}

// GetSession reads one session.
func (c *Client) GetSession(ctx context.Context, id string, opts ...CallOption) (*Session, error) {
	return fetch[Session](ctx, c, http.MethodGet, "/v1/sessions/"+segment(id), nil, nil, opts)
}

// ListSessionsParams narrows and pages GET /v1/sessions.
type ListSessionsParams struct {
	Status string // active or cancelled; empty for both
	Limit  int    // 0: the server's default
	Cursor string // NextCursor of the previous page
}

// ListSessions lists the caller's sessions, newest first.
func (c *Client) ListSessions(ctx context.Context, p ListSessionsParams, opts ...CallOption) (*Page[Session], error) {
	q := url.Values{}
	setNonEmpty(q, "status", p.Status)
	setPaging(q, p.Limit, p.Cursor)
	return fetch[Page[Session]](ctx, c, http.MethodGet, "/v1/sessions", q, nil, opts)
}

// SessionEvents reads the session's event log (only the events of some
// types with WithKinds).
func (c *Client) SessionEvents(ctx context.Context, id string, p EventsParams, opts ...CallOption) (*EventPage, error) {
	return c.events(ctx, "/v1/sessions/"+segment(id)+"/events", p, opts)
}

// CancelledSession is the answer of CancelSession. UnreleasedTaskIDs is
// there with WithReleaseWait only: the cancelled tasks whose executors had
// not released them when the wait ended (empty when all had).
type CancelledSession struct {
	Session           Session  `json:"session"`
	CancelledTaskIDs  []string `json:"cancelledTaskIds"`
	UnreleasedTaskIDs []string `json:"unreleasedTaskIds,omitempty"`
}

// ResetSession is the answer of ResetSession.
type ResetSession struct {
	PreviousSessionID string  `json:"previousSessionId"`
	Session           Session `json:"session"`
}

type reasonBody struct {
	Reason string `json:"reason,omitempty"`
}

// CancelSession cancels every live task of the session, closes its hooks and
// marks it cancelled. A repeat is a no-op. With WithReleaseWait it answers
// once the executors have released every task it cancelled, or when the
// wait runs out, with those not released in UnreleasedTaskIDs.
func (c *Client) CancelSession(ctx context.Context, id, reason string, opts ...CallOption) (*CancelledSession, error) {
	q := url.Values{}
	if w := callOf(opts).releaseWait; w > 0 {
		q.Set("wait", w.String())
	}
	return fetch[CancelledSession](ctx, c, http.MethodPost, "/v1/sessions/"+segment(id)+"/cancel", q, reasonBody{reason}, opts)
}

// ResetSession cancels the session and opens a new one with the same owner
// and metadata.
func (c *Client) ResetSession(ctx context.Context, id, reason string, opts ...CallOption) (*ResetSession, error) {
	return fetch[ResetSession](ctx, c, http.MethodPost, "/v1/sessions/"+segment(id)+"/reset", nil, reasonBody{reason}, opts)
}
