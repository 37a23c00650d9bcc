package wire

// Notification endpoint statuses.
const (
	EndpointActive = "active"
	EndpointDead   = "dead"
)

// MaxEndpoints is how many notification endpoints one session or one task
// may hold.
const MaxEndpoints = 10

// DefaultNotifyKinds are the event types an endpoint that names none is
// sent: the wake-worthy ones. Progress is not among them.
var DefaultNotifyKinds = []string{
	EventTaskStatus, EventTaskMessage, EventTaskTerminal, EventInputRequested, EventAuthorizationRequired,
}

// DefaultSlackKinds are the event types a Slack endpoint that names none
// is sent: the question is posted, and the same message updated when it is
// answered or the task ends.
var DefaultSlackKinds = []string{EventInputRequested, EventInputResolved, EventTaskTerminal}

// EndpointRequest asks for a notification endpoint: where to POST (URL), or
// a Slack channel to post to (Slack) instead; which event types (none:
// DefaultNotifyKinds, or DefaultSlackKinds for Slack); and the signing
// secret of a URL ("whsec_" and base64; made by the server when empty).
type EndpointRequest struct {
	URL    string       `json:"url,omitempty"`
	Slack  *SlackTarget `json:"slack,omitempty"`
	Kinds  []string     `json:"kinds,omitempty"`
	Secret string       `json:"secret,omitempty"`
}

// SlackTarget is the Slack channel (an id such as C0123ABCD, or #name) that
// a Slack endpoint posts to.
type SlackTarget struct {
	Channel string `json:"channel"`
}

// Endpoint is a notification endpoint as the API shows it: a URL, or a
// Slack channel. Secret is set only in the answer that created a URL
// endpoint; no read shows it again.
type Endpoint struct {
	EndpointID string       `json:"endpointId"`
	URL        string       `json:"url,omitempty"`
	Slack      *SlackTarget `json:"slack,omitempty"`
	Kinds      []string     `json:"kinds"`
	Status     string       `json:"status"` // active or dead
	DeadReason string       `json:"deadReason,omitempty"`
	Secret     string       `json:"secret,omitempty"`
	// Format is how deliveries are written: "" for the event as is,
	// FormatA2A for an A2A push notification config's.
	Format string `json:"format,omitempty"`
}

// FormatA2A marks the endpoint of an A2A push notification config: its
// deliveries are A2A StreamResponse bodies with the config's token header.
const FormatA2A = "a2a"

// DeadLetter is a notification that was given up on after its last attempt.
type DeadLetter[T any] struct {
	EndpointID string `json:"endpointId"`
	EventID    string `json:"eventId"`
	EventType  string `json:"eventType"`
	TaskID     string `json:"taskId,omitempty"`
	Attempts   int    `json:"attempts"`
	LastError  string `json:"lastError"`
	At         T      `json:"at"`
}
