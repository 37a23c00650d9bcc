package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"
)

// Error codes the MCP specification adds to JSON-RPC's.
const (
	codeHeaderMismatch          = -32020
	codeMissingClientCapability = -32021
	codeUnsupportedVersion      = -32022
)

// retryAfterSeconds is the Retry-After of an answer the client may retry.
const retryAfterSeconds = "1"

// rpcError is a JSON-RPC error with the HTTP status of the answer that
// carries it.
type rpcError struct {
	code       int64
	message    string
	data       any
	status     int
	retryAfter string
}

func (e *rpcError) Error() string { return e.message }

// wireError is e as the JSON-RPC error object.
func (e *rpcError) wireError() *jsonrpc.Error {
	we := &jsonrpc.Error{Code: e.code, Message: e.message}
	if e.data != nil {
		we.Data, _ = json.Marshal(e.data)
	}
	return we
}

func errParse() *rpcError {
	return &rpcError{code: jsonrpc.CodeParseError, message: "parse error: the body is not valid JSON", status: http.StatusBadRequest}
}

func errInvalidRequest(msg string) *rpcError {
	return &rpcError{code: jsonrpc.CodeInvalidRequest, message: "invalid request: " + msg, status: http.StatusBadRequest}
}

// errMethodNotFound is an unknown method: HTTP 404 under the stateless
// generation, whose transport says so; a plain error answer otherwise.
func errMethodNotFound(method string, modern bool) *rpcError {
	status := http.StatusOK
	if modern {
		status = http.StatusNotFound
	}
	return &rpcError{code: jsonrpc.CodeMethodNotFound, message: "method not found: " + method, status: status}
}

// errInvalidParams is a request whose params can never succeed as sent:
// data.details names each field at fault, as the REST API's do.
func errInvalidParams(field, msg string) *rpcError {
	return &rpcError{code: jsonrpc.CodeInvalidParams, message: field + " " + msg,
		data: map[string]any{"details": []wire.Detail{{Field: field, Message: msg}}}, status: http.StatusOK}
}

// errNoSuchTask is the one answer for a missing task and for somebody
// else's: the same code and message.
func errNoSuchTask() *rpcError {
	return &rpcError{code: jsonrpc.CodeInvalidParams, message: "task not found", status: http.StatusOK}
}

func errNoSuchTool(name string) *rpcError {
	return &rpcError{code: jsonrpc.CodeInvalidParams, message: "unknown tool: " + name, status: http.StatusOK}
}

func errHeaderMismatch(msg string) *rpcError {
	return &rpcError{code: codeHeaderMismatch, message: "header mismatch: " + msg, status: http.StatusBadRequest}
}

func errUnsupportedVersion(requested string) *rpcError {
	return &rpcError{code: codeUnsupportedVersion, message: "unsupported protocol version",
		data:   map[string]any{"supported": supportedVersions, "requested": requested},
		status: http.StatusBadRequest}
}

// errMissingMeta is a stateless request without a required _meta field.
func errMissingMeta(key string) *rpcError {
	e := errInvalidParams("_meta."+key, "is required")
	e.status = http.StatusBadRequest
	return e
}

// errNeedsTasks is a request that needs the tasks extension from a client
// that did not declare it.
func errNeedsTasks() *rpcError {
	return &rpcError{code: codeMissingClientCapability, message: "missing required client capability",
		data:   map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extTasks: map[string]any{}}}},
		status: http.StatusBadRequest}
}

// errUnavailable is the store being down or busy: the client may retry,
// after Retry-After, on any replica.
func errUnavailable() *rpcError {
	return &rpcError{code: jsonrpc.CodeInternalError, message: "the store is unavailable; retry shortly",
		data:   map[string]any{"code": wire.CodeStoreUnavailable, "retryAfterMs": 1000},
		status: http.StatusServiceUnavailable, retryAfter: retryAfterSeconds}
}

// errDraining is a held request the server stops holding because it shuts
// down: the client retries, on another replica.
func errDraining() *rpcError {
	return &rpcError{code: jsonrpc.CodeInternalError, message: "the server is shutting down; retry shortly",
		data:   map[string]any{"code": wire.CodeStoreUnavailable, "retryAfterMs": 1000},
		status: http.StatusServiceUnavailable, retryAfter: retryAfterSeconds}
}

// errInternal is anything else: the client sees an id it can quote, the
// log has the error under the same id.
func errInternal(errorID string) *rpcError {
	return &rpcError{code: jsonrpc.CodeInternalError, message: "internal error",
		data: map[string]any{"code": wire.CodeInternal, "errorId": errorID}, status: http.StatusInternalServerError}
}

// newErrorID is the id of one internal error.
func newErrorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// backendError maps a Backend's error: notFound is the answer for
// problem.ErrNotFound (the task's or the tool's). An error that is none of
// the known ones is logged by h and answered as internal.
func (h *handler) backendError(err error, notFound *rpcError) *rpcError {
	var verr *problem.ValidationError
	switch {
	case errors.Is(err, problem.ErrNotFound):
		return notFound
	case errors.As(err, &verr):
		return errInvalidParams(verr.Field, verr.Message)
	case errors.Is(err, ErrUnavailable):
		return errUnavailable()
	}
	id := newErrorID()
	h.cfg.Logger.Error("mcp backend error", "errorId", id, "err", err)
	return errInternal(id)
}
