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

// EndpointRequest asks for a notification endpoint: where to POST, which
// event types (none: DefaultNotifyKinds) and the signing secret ("whsec_"
// and base64; made by the server when empty).
type EndpointRequest struct {
	URL    string   `json:"url"`
	Kinds  []string `json:"kinds,omitempty"`
	Secret string   `json:"secret,omitempty"`
}

// Endpoint is a notification endpoint as the API shows it. Secret is set
// only in the answer that created the endpoint; no read shows it again.
type Endpoint struct {
	EndpointID string   `json:"endpointId"`
	URL        string   `json:"url"`
	Kinds      []string `json:"kinds"`
	Status     string   `json:"status"` // active or dead
	DeadReason string   `json:"deadReason,omitempty"`
	Secret     string   `json:"secret,omitempty"`
}

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
