package wire

// Error codes: the stable code of every error answer,
// {"error": {"code": ..., "message": ..., ...}}.
const (
	CodeInvalidJSON         = "invalid_json"
	CodeInvalidRequest      = "invalid_request"
	CodeUnauthorized        = "unauthorized"
	CodeNotFound            = "not_found"
	CodeRequesterNotAllowed = "requester_not_allowed" // 403: the caller's token may not act for that requester
	CodeMethodNotAllowed    = "method_not_allowed"
	CodeTaskTerminal        = "task_terminal"
	CodeTaskNotTerminal     = "task_not_terminal" // 409: release of a task that has not ended
	CodeNotInputRequired    = "not_input_required"
	CodeUnknownRequest      = "unknown_request"
	CodeInputConflict       = "input_conflict"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeSessionNotActive    = "session_not_active"
	CodeHookClosed          = "hook_closed"
	CodeInputClosed         = "input_closed"
	CodeSignatureInvalid    = "signature_invalid"
	CodePayloadTooLarge     = "payload_too_large"
	CodeRequestTimeout      = "request_timeout"
	CodeRateLimited         = "rate_limited"
	CodeStoreUnavailable    = "store_unavailable"
	CodeTooManyTasks        = "too_many_tasks"     // 429: the session holds as many live tasks as it may
	CodeTaskTooLarge        = "task_too_large"     // 413: the task record would be above the size limit
	CodeTooManyEndpoints    = "too_many_endpoints" // 409: the session or task holds as many notification endpoints as it may
	CodeToolNameTaken       = "tool_name_taken"    // 409: another principal publishes a tool by that name
	CodeOverloaded          = "overloaded"
	CodeInternal            = "internal"
)

// Detail is one field problem of an invalid_request.
type Detail struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error codes of provider sign-in.
const (
	CodeSigninClosed = "signin_closed" // 410: the sign-in attempt ran out, or its task ended
)
