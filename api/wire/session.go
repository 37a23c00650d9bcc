package wire

import "encoding/json"

// Session statuses.
const (
	SessionActive    = "active"
	SessionCancelled = "cancelled"
)

// CreateSession is the body of POST /v1/sessions. J is the Go type of
// Metadata (see the package doc).
type CreateSession[J any] struct {
	Metadata J                 `json:"metadata,omitempty"`
	Notify   []EndpointRequest `json:"notify,omitempty"` // the answer shows each one's secret, once
}

// Session is an agent's conversation, as the API shows it: the owner scope
// of its tasks. T is the Go type of its timestamps.
type Session[T any] struct {
	SessionID     string          `json:"sessionId"`
	Status        string          `json:"status"` // active or cancelled
	Owner         string          `json:"owner"`
	CreatedAt     T               `json:"createdAt"`
	LastUpdatedAt T               `json:"lastUpdatedAt"`
	Metadata      json.RawMessage `json:"metadata"`
	Notify        []Endpoint      `json:"notify"`
}
