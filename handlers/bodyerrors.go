package handlers

import (
	"errors"
	"net/http"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/bodylimit"
	"github.com/taskhook/taskhook/strictjson"
)

// bodyError maps the refusals of reading a request body (bodylimit) and of
// decoding it (strictjson; its field problems are problem.ValidationError,
// mapped with the services').
func bodyError(err error) *APIError {
	var syntax *strictjson.SyntaxError
	var large *bodylimit.TooLargeError
	var late *bodylimit.TimeoutError
	switch {
	case errors.As(err, &syntax):
		return apiError(http.StatusBadRequest, wire.CodeInvalidJSON, syntax.Message)
	case errors.As(err, &large):
		return apiError(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge, large.Error())
	case errors.As(err, &late):
		return apiError(http.StatusRequestTimeout, wire.CodeRequestTimeout, late.Error())
	case errors.Is(err, bodylimit.ErrUnreadable):
		return apiError(http.StatusBadRequest, wire.CodeInvalidJSON, "could not read the body")
	case errors.Is(err, bodylimit.ErrShareFull):
		return &APIError{Status: http.StatusTooManyRequests, Code: wire.CodeRateLimited, RetryAfter: retryAfterUnavailable,
			Message: "this client address is sending as many request bodies as it may at once; retry shortly"}
	case errors.Is(err, bodylimit.ErrOverloaded):
		return apiError(http.StatusServiceUnavailable, wire.CodeOverloaded,
			"the server is taking in too many request bodies at once; retry shortly")
	}
	return nil
}
