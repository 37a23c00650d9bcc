// Package apitest checks real traffic against api/openapi.yaml: a
// RoundTripper that validates every request and response it carries, so any
// black-box test doubles as a proof that the document is true; and an
// EventReader, for the streams of server-sent events it hands over unread.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/taskhook/taskhook/api"
)

// Document is the loaded and validated api/openapi.yaml. The document is
// shared: treat it as read-only.
func Document() (*openapi3.T, error) {
	c := loadContract()
	return c.doc, c.err
}

type contract struct {
	doc    *openapi3.T
	router routers.Router
	errors *openapi3.Schema // the Error schema, for answers on routes the document does not list
	err    error
}

var loadContract = sync.OnceValue(func() contract {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		return contract{err: fmt.Errorf("load api/openapi.yaml: %w", err)}
	}
	if err := doc.Validate(loader.Context); err != nil {
		return contract{err: fmt.Errorf("validate api/openapi.yaml: %w", err)}
	}
	// Match requests by path alone: test servers listen on a loopback port,
	// not on the documented server URL.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return contract{err: fmt.Errorf("route api/openapi.yaml: %w", err)}
	}
	errSchema := doc.Components.Schemas["Error"]
	if errSchema == nil || errSchema.Value == nil {
		return contract{err: errors.New("api/openapi.yaml has no Error schema")}
	}
	return contract{doc: doc, router: router, errors: errSchema.Value}
})

// Transport returns a RoundTripper that sends each request through base (or
// http.DefaultTransport when base is nil) and validates the exchange against
// the document, reporting every mismatch with t.Errorf.
//
//   - Responses are always validated: status (it must be documented),
//     headers and body. The body of /metrics (Prometheus text) is not, nor
//     that of a server-sent event stream (text/event-stream): a stream is
//     handed to the caller as it arrives, unread, after its status and
//     headers (Content-Type included) are checked.
//   - Requests are validated too, but a request mismatch is reported only
//     when the server answered 2xx: a test may send bad input on purpose and
//     expect a 4xx.
//   - A request on a path or method the document does not list must be
//     answered 404 or 405 with an Error body.
//
// Reports name the method, the path template and the status, never a header
// value of the request. Both bodies still reach the caller.
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	c := loadContract()
	if c.err != nil {
		t.Fatalf("apitest: %v", c.err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base, c: c}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
	c    contract
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := tr.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}

	streaming := isMediaType(resp.Header.Get("Content-Type"), "text/event-stream")
	var respBody []byte
	if !streaming {
		var readErr error
		respBody, readErr = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var rest io.Reader = bytes.NewReader(respBody)
		if readErr != nil {
			// Hand the caller what arrived, then the error it would have seen.
			rest = io.MultiReader(rest, errReader{readErr})
		}
		resp.Body = io.NopCloser(rest)
		if readErr != nil {
			return resp, nil
		}
	}
	tr.check(req, body, resp, respBody, streaming)
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// check validates one exchange and reports what does not match.
func (tr *transport) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte, streaming bool) {
	ctx := context.Background()
	vreq := req.Clone(ctx)
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := tr.c.router.FindRoute(vreq)
	if err != nil {
		tr.checkUnrouted(req, resp, respBody, err)
		return
	}
	where := fmt.Sprintf("%s %s → %d", req.Method, route.Path, resp.StatusCode)

	opts := &openapi3filter.Options{
		AuthenticationFunc:    acceptAuthentication,
		IncludeResponseStatus: true,
		SkipSettingDefaults:   true,
		MultiError:            true,
		ExcludeResponseBody:   streaming || route.Path == "/metrics",
	}
	in := &openapi3filter.RequestValidationInput{
		Request: vreq, PathParams: params, Route: route, Options: opts,
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)

	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                opts,
	}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		tr.t.Errorf("openapi: %s: the response does not match the document: %v", where, err)
	} else if streaming {
		tr.checkStream(route.Operation, resp, where)
	}
	if reqErr != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		tr.t.Errorf("openapi: %s: the server accepted a request the document refuses: %v", where, reqErr)
	}
}

// checkStream checks that the document allows a stream where the server
// sent one: with the body excluded, ValidateResponse does not look at the
// Content-Type either.
func (tr *transport) checkStream(op *openapi3.Operation, resp *http.Response, where string) {
	ref := op.Responses.Status(resp.StatusCode)
	if ref == nil {
		ref = op.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return // ValidateResponse has reported the status
	}
	if ct := resp.Header.Get("Content-Type"); ref.Value.Content.Get(ct) == nil {
		tr.t.Errorf("openapi: %s: the document has no %q answer here", where, ct)
	}
}

// checkUnrouted handles a request the document has no operation for: the
// server must refuse it with a documented Error body.
func (tr *transport) checkUnrouted(req *http.Request, resp *http.Response, respBody []byte, routeErr error) {
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.EscapedPath(), resp.StatusCode)
	switch {
	case errors.Is(routeErr, routers.ErrPathNotFound) && resp.StatusCode == http.StatusNotFound,
		errors.Is(routeErr, routers.ErrMethodNotAllowed) && resp.StatusCode == http.StatusMethodNotAllowed:
	default:
		tr.t.Errorf("openapi: %s: no operation in the document (%v)", where, routeErr)
		return
	}
	if resp.Header.Get("X-Request-Id") == "" {
		tr.t.Errorf("openapi: %s: no X-Request-Id", where)
	}
	if !isMediaType(resp.Header.Get("Content-Type"), "application/json") {
		tr.t.Errorf("openapi: %s: Content-Type %q, want application/json", where, resp.Header.Get("Content-Type"))
		return
	}
	var v any
	if err := json.Unmarshal(respBody, &v); err != nil {
		tr.t.Errorf("openapi: %s: body is not JSON: %v", where, err)
		return
	}
	if err := tr.c.errors.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		tr.t.Errorf("openapi: %s: body is not an Error: %v", where, err)
	}
}

// acceptAuthentication accepts every request: the server checks tokens, and
// a refused one is a documented 401.
func acceptAuthentication(context.Context, *openapi3filter.AuthenticationInput) error { return nil }

func isMediaType(header, want string) bool {
	mt, _, err := mime.ParseMediaType(header)
	return err == nil && mt == want
}
