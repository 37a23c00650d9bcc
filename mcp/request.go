package mcp

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/taskhook/taskhook/authz"
)

// request is one JSON-RPC message being served.
type request struct {
	h         *handler
	w         http.ResponseWriter
	r         *http.Request
	p         authz.Principal
	m         message
	canStream bool   // the client accepts an SSE stream
	label     string // the method, for Observe
	modern    bool   // the stateless generation
	version   string
	caps      clientCaps
	progress  json.RawMessage // the request's progressToken, if any
	stream    *sseStream      // the answer's stream, once begun
}

// clientCaps is what a client said it can do.
type clientCaps struct {
	form, url bool // elicitation modes
	tasks     bool // the tasks extension (stateless generation)
}

// readCaps reads ClientCapabilities: elicitation {} alone means form.
func readCaps(raw json.RawMessage) (clientCaps, bool) {
	var c struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
			URL  json.RawMessage `json:"url"`
		} `json:"elicitation"`
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &c) != nil {
		return clientCaps{}, false
	}
	var caps clientCaps
	if e := c.Elicitation; e != nil {
		caps.form = e.Form != nil || e.URL == nil
		caps.url = e.URL != nil
	}
	_, caps.tasks = c.Extensions[extTasks]
	return caps, true
}

// reply answers the request with its result: a JSON body, or the last
// event of its stream.
func (q *request) reply(result any) {
	q.h.observe(q.label, "ok")
	res := response{JSONRPC: "2.0", ID: q.m.id, Result: result}
	if q.stream != nil {
		_ = q.stream.send(res)
		return
	}
	writeJSON(q.w, http.StatusOK, "", res)
}

// fail answers the request with an error: with its HTTP status, or as the
// last event of its stream.
func (q *request) fail(e *rpcError) {
	q.h.observe(q.label, strconv.FormatInt(e.code, 10))
	res := response{JSONRPC: "2.0", ID: q.m.id, Error: e.wireError()}
	if q.stream != nil {
		_ = q.stream.send(res)
		return
	}
	writeJSON(q.w, e.status, e.retryAfter, res)
}

// accepted answers a notification or a response: 202, no body.
func (q *request) accepted() {
	q.h.observe(q.label, "ok")
	q.w.WriteHeader(http.StatusAccepted)
}

// serve picks the request's generation and serves it. A request that
// carries its version in _meta, or names in its header a version that
// does not begin with initialize, is stateless (2026-07-28); any other
// is of a generation that began with initialize.
func (h *handler) serve(q *request) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if e := decodeParams(q.m.params, &p); e != nil {
		q.fail(errInvalidParams("_meta", "must be an object"))
		return
	}
	if q.m.kind == kindResponse {
		h.routeResponse(q)
		return
	}
	header := q.r.Header.Get(headerVersion)
	_, inMeta := p.Meta[metaVersion]
	if inMeta || (header != "" && !legacyVersions[header]) {
		q.modern = true
		h.serveModern(q, p.Meta, header)
		return
	}
	h.serveLegacy(q, p.Meta, header)
}

// readProgressToken reads _meta.progressToken: a string or an integer.
func (q *request) readProgressToken(meta map[string]json.RawMessage) *rpcError {
	raw, ok := meta["progressToken"]
	if !ok || string(raw) == "null" {
		return nil
	}
	if !validID(raw) {
		return errInvalidParams("_meta.progressToken", "must be a string or an integer")
	}
	q.progress = raw
	return nil
}

// headerValue decodes a header that may carry the base64 sentinel form
// (=?base64?...?=); ok is false for a value with characters no header may
// carry plainly, or a sentinel that does not decode.
func headerValue(v string) (string, bool) {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") && len(v) >= len("=?base64??=") {
		b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-2])
		if err != nil || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return v, true
}
