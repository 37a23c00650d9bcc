package wire

// ConnectionView is a configured connection as GET /v1/connections lists it:
// never its client id or secret.
type ConnectionView struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// AuthorizationAsk is the body of POST /v1/tasks/{taskId}/authorizations.
type AuthorizationAsk struct {
	Connection string   `json:"connection"`
	Scopes     []string `json:"scopes,omitempty"`
}

// ConnectionToken is a provider token handed to a task (200).
type ConnectionToken struct {
	Connection  string   `json:"connection"`
	AccessToken string   `json:"accessToken"`
	TokenType   string   `json:"tokenType"`
	ExpiresAt   *string  `json:"expiresAt"` // null: the provider gave no expiry
	Scopes      []string `json:"scopes"`
}

// AuthorizationPending answers a token request that needs a sign-in first
// (202): the task is input_required with the authorization request.
type AuthorizationPending struct {
	Status           string `json:"status"` // authorization_required
	RequestID        string `json:"requestId"`
	Connection       string `json:"connection"`
	AuthorizationURL string `json:"authorizationUrl"`
	ExpiresAt        string `json:"expiresAt"`
}

// AuthorizationRejected answers the loop guard: the token was dropped, and
// the task failed when the token came from a sign-in moments ago.
type AuthorizationRejected struct {
	Connection string `json:"connection"`
	Action     string `json:"action"` // token_dropped or task_failed
}
