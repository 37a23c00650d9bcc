package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/bodylimit"
	"github.com/taskhook/taskhook/strictjson"
)

// Each refusal of reading or decoding a body has its answer; a client that
// went away is not one of them (answerOf writes 499).
func TestBodyErrorAnswers(t *testing.T) {
	t.Parallel()
	var syntax error = &strictjson.SyntaxError{Message: "the body is not valid JSON"}
	for _, c := range []struct {
		err        error
		status     int
		code       string
		message    string
		retryAfter string
	}{
		{syntax, 400, wire.CodeInvalidJSON, "the body is not valid JSON", ""},
		{&bodylimit.TooLargeError{Max: 1024}, 413, wire.CodePayloadTooLarge, "the body is larger than 1024 bytes", ""},
		{&bodylimit.TimeoutError{Timeout: 15 * time.Second}, 408, wire.CodeRequestTimeout, "the body did not arrive within 15s", ""},
		{bodylimit.ErrUnreadable, 400, wire.CodeInvalidJSON, "could not read the body", ""},
		{fmt.Errorf("read: %w", bodylimit.ErrShareFull), http.StatusTooManyRequests, wire.CodeRateLimited,
			"this client address is sending as many request bodies as it may at once; retry shortly", "1"},
		{bodylimit.ErrOverloaded, 503, wire.CodeOverloaded, "the server is taking in too many request bodies at once; retry shortly", ""},
	} {
		e := toAPIError(c.err)
		if e == nil || e.Status != c.status || e.Code != c.code || e.Message != c.message || e.RetryAfter != c.retryAfter {
			t.Errorf("%v: %+v, want %d %s %q (Retry-After %q)", c.err, e, c.status, c.code, c.message, c.retryAfter)
		}
	}
	if e := bodyError(context.Canceled); e != nil {
		t.Errorf("a client gone: %+v", e)
	}
}
