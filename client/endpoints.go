package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

type (
	// EndpointRequest asks for a notification endpoint: where the service
	// POSTs events (URL) or the Slack channel it posts questions to
	// (Slack), which event types (none: DefaultNotifyKinds, or
	// DefaultSlackKinds) and the signing secret of a URL ("whsec_" and
	// base64; the server makes one when empty). Its fields:
	//
	//	URL    string
	//	Slack  *SlackTarget // instead of URL
	//	Kinds  []string     // event types
	//	Secret string
	EndpointRequest = wire.EndpointRequest
	// SlackTarget is the Slack channel of a Slack endpoint. Its fields:
	//
	//	Channel string // an id such as C0123ABCD, or #name
	SlackTarget = wire.SlackTarget
	// Endpoint is a notification endpoint. Secret is set only in the answer
	// that created it. Its fields:
	//
	//	EndpointID string
	//	URL        string
	//	Slack      *SlackTarget
	//	Kinds      []string
	//	Status     string       // active or dead
	//	DeadReason string
	//	Secret     string
	//	Format     string       // "" for the event as is; "a2a" for an A2A push config's
	Endpoint = wire.Endpoint
	// DeadLetter is a notification the service gave up on. Its fields:
	//
	//	EndpointID         string
	//	EventID, EventType string
	//	TaskID             string
	//	Attempts           int
	//	LastError          string
	//	At                 time.Time
	DeadLetter = wire.DeadLetter[time.Time]
)

// DefaultNotifyKinds are the event types an endpoint that names none gets;
// DefaultSlackKinds those of a Slack endpoint.
var (
	DefaultNotifyKinds = wire.DefaultNotifyKinds
	DefaultSlackKinds  = wire.DefaultSlackKinds
)

// AddSessionEndpoint registers one more notification endpoint on a session:
// it gets the session's events and those of its tasks.
func (c *Client) AddSessionEndpoint(ctx context.Context, sessionID string, in EndpointRequest, opts ...CallOption) (*Endpoint, error) {
	return c.addEndpoint(ctx, "/v1/sessions/"+segment(sessionID), in, opts)
}

// AddTaskEndpoint registers one more notification endpoint on a task.
func (c *Client) AddTaskEndpoint(ctx context.Context, taskID string, in EndpointRequest, opts ...CallOption) (*Endpoint, error) {
	return c.addEndpoint(ctx, "/v1/tasks/"+segment(taskID), in, opts)
}

// SessionEndpoints lists a session's notification endpoints (no secrets).
func (c *Client) SessionEndpoints(ctx context.Context, sessionID string, opts ...CallOption) ([]Endpoint, error) {
	return c.endpoints(ctx, http.MethodGet, "/v1/sessions/"+segment(sessionID)+"/notify", opts)
}

// TaskEndpoints lists a task's notification endpoints (no secrets).
func (c *Client) TaskEndpoints(ctx context.Context, taskID string, opts ...CallOption) ([]Endpoint, error) {
	return c.endpoints(ctx, http.MethodGet, "/v1/tasks/"+segment(taskID)+"/notify", opts)
}

// RemoveSessionEndpoint deletes one of a session's notification endpoints
// and returns those left.
func (c *Client) RemoveSessionEndpoint(ctx context.Context, sessionID, endpointID string, opts ...CallOption) ([]Endpoint, error) {
	return c.endpoints(ctx, http.MethodDelete, "/v1/sessions/"+segment(sessionID)+"/notify/"+segment(endpointID), opts)
}

// RemoveTaskEndpoint deletes one of a task's notification endpoints and
// returns those left.
func (c *Client) RemoveTaskEndpoint(ctx context.Context, taskID, endpointID string, opts ...CallOption) ([]Endpoint, error) {
	return c.endpoints(ctx, http.MethodDelete, "/v1/tasks/"+segment(taskID)+"/notify/"+segment(endpointID), opts)
}

// DeadLetterPage is a page of a session's dead letters; Cursor reads on.
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"deadLetters"`
	Cursor      string       `json:"cursor"`
}

// DeadLetters reads the notifications given up on for a session and its
// tasks, oldest first, after a cursor ("" for the first).
func (c *Client) DeadLetters(ctx context.Context, sessionID, after string, limit int, opts ...CallOption) (*DeadLetterPage, error) {
	q := url.Values{}
	setNonEmpty(q, "after", after)
	setPaging(q, limit, "")
	return fetch[DeadLetterPage](ctx, c, http.MethodGet, "/v1/sessions/"+segment(sessionID)+"/notify/dead-letters", q, nil, opts)
}

func (c *Client) addEndpoint(ctx context.Context, owner string, in EndpointRequest, opts []CallOption) (*Endpoint, error) {
	return fetch[Endpoint](ctx, c, http.MethodPost, owner+"/notify", nil, in, opts)
}

// endpoints reads an endpoint list ({"notify": [...]}) a call answers.
func (c *Client) endpoints(ctx context.Context, method, path string, opts []CallOption) ([]Endpoint, error) {
	var out struct {
		Notify []Endpoint `json:"notify"`
	}
	if _, err := c.do(ctx, method, path, nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return out.Notify, nil
}
