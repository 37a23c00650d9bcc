package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Session statuses.
const (
	SessionActive    = wire.SessionActive
	SessionCancelled = wire.SessionCancelled
)

// Session is an agent's conversation: the owner scope of its tasks.
type Session = wire.Session[time.Time]

// CreateSessionInput is the body of POST /v1/sessions.
type CreateSessionInput struct {
	Metadata map[string]any    `json:"metadata,omitempty"`
	Notify   []EndpointRequest `json:"notify,omitempty"` // notification endpoints; the answer shows each one's secret, once
}

// CreateSession opens an active session owned by the caller.
func (c *Client) CreateSession(ctx context.Context, in CreateSessionInput, opts ...CallOption) (*Session, error) {
	var s Session
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions", nil, in, &s, opts); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSession reads one session.
func (c *Client) GetSession(ctx context.Context, id string, opts ...CallOption) (*Session, error) {
	var s Session
	if _, err := c.do(ctx, http.MethodGet, "/v1/sessions/"+segment(id), nil, nil, &s, opts); err != nil {
		return nil, err
	}
	return &s, nil
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
	var page Page[Session]
	if _, err := c.do(ctx, http.MethodGet, "/v1/sessions", q, nil, &page, opts); err != nil {
		return nil, err
	}
	return &page, nil
}

// SessionEvents reads the session's event log.
func (c *Client) SessionEvents(ctx context.Context, id string, p EventsParams, opts ...CallOption) (*EventPage, error) {
	return c.events(ctx, "/v1/sessions/"+segment(id)+"/events", p, opts)
}

// CancelledSession is the answer of CancelSession.
type CancelledSession struct {
	Session          Session  `json:"session"`
	CancelledTaskIDs []string `json:"cancelledTaskIds"`
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
// marks it cancelled. A repeat is a no-op.
func (c *Client) CancelSession(ctx context.Context, id, reason string, opts ...CallOption) (*CancelledSession, error) {
	var out CancelledSession
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions/"+segment(id)+"/cancel", nil, reasonBody{reason}, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ResetSession cancels the session and opens a new one with the same owner
// and metadata.
func (c *Client) ResetSession(ctx context.Context, id, reason string, opts ...CallOption) (*ResetSession, error) {
	var out ResetSession
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions/"+segment(id)+"/reset", nil, reasonBody{reason}, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}
