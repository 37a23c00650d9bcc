package mcp_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/apitest"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/jsonpath"
	"github.com/taskhook/taskhook/mcp"
)

const (
	publicURL = "https://taskhook.example"
	v2026     = "2026-07-28"
	v2025     = "2025-11-25"
)

// harness is the MCP endpoint over a memBackend, on a test server.
type harness struct {
	t      *testing.T
	b      *memBackend
	srv    *httptest.Server
	client *http.Client
}

// authenticate takes "Bearer <name>" for the principal <name>.
func authenticate(r *http.Request) (authz.Principal, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || name == "" || name == "forged" {
		return authz.Principal{}, errors.New("no valid token")
	}
	return authz.Principal{ID: name}, nil
}

func newHarness(t *testing.T, opts ...func(*mcp.Config)) *harness {
	t.Helper()
	return serve(t, newMemBackend(), opts...)
}

// replica is another server over the same backend: nothing of a
// conversation is shared between the two but what the backend holds.
func (h *harness) replica() *harness {
	h.t.Helper()
	return serve(h.t, h.b)
}

func serve(t *testing.T, b *memBackend, opts ...func(*mcp.Config)) *harness {
	t.Helper()
	if len(b.tools) == 0 {
		addTools(b)
	}
	cfg := mcp.Config{Backend: b, Authenticate: authenticate, PublicURL: publicURL,
		AllowedOrigins: []string{"https://console.example:8443"}, MaxBodyBytes: 4096, ServerVersion: "1.2.3"}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := mcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(mcp.Path, h)
	mux.Handle(mcp.MetadataPath, mcp.MetadataHandler(publicURL, []string{"https://issuer.example"}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &harness{t: t, b: b, srv: srv, client: &http.Client{Timeout: 30 * time.Second}}
}

func addTools(b *memBackend) {
	schema := json.RawMessage(`{"type":"object","properties":{"repo":{"type":"string"}},"required":["repo"]}`)
	b.addTool(memTool{Tool: mcp.Tool{Name: "devbox", Title: "Dev box", Description: "Runs work in a dev box",
		InputSchema: schema, OutputSchema: json.RawMessage(`{"type":"object"}`)}, publisher: "exec", callers: []string{"*"}, required: []string{"repo"}})
	b.addTool(memTool{Tool: mcp.Tool{Name: "private", Description: "Only for bob"}, publisher: "exec", callers: []string{"bob"}})
	b.addTool(memTool{Tool: mcp.Tool{Name: "echo", Description: "Echoes"}, publisher: "exec", callers: []string{"*"}})
	b.addTool(memTool{Tool: mcp.Tool{Name: "sum", Description: "Adds"}, publisher: "exec", callers: []string{"*"}})
}

// reply is an answer read whole.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// post sends body to /mcp with the token and headers.
func (h *harness) post(token string, headers map[string]string, body string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+mcp.Path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *harness) do(token string, headers map[string]string, body string) reply {
	h.t.Helper()
	resp := h.post(token, headers, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			h.t.Fatalf("answer is not JSON: %v: %s", err, raw)
		}
	}
	return r
}

var tasksCaps = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// modernBody is a stateless request: params with the _meta it needs.
func modernBody(id any, method string, params, caps map[string]any) string {
	if params == nil {
		params = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": v2026, "io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw-client", "version": "0"}}
	if old, ok := params["_meta"].(map[string]any); ok {
		for k, v := range old {
			meta[k] = v
		}
	}
	params["_meta"] = meta
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// modern sends a stateless request with the headers it needs; name is
// Mcp-Name (the tool or the task).
func (h *harness) modern(token, method, name string, params, caps map[string]any) reply {
	h.t.Helper()
	return h.do(token, modernHeaders(method, name), modernBody(1, method, params, caps))
}

func legacyBody(id any, method string, params map[string]any) string {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// initialize opens a 2025-11-25 session: its id.
func (h *harness) initialize(token string, caps map[string]any) string {
	h.t.Helper()
	r := h.do(token, nil, legacyBody(0, "initialize", map[string]any{"protocolVersion": v2025, "capabilities": caps,
		"clientInfo": map[string]any{"name": "legacy", "version": "0"}}))
	if r.status != http.StatusOK || r.body["error"] != nil {
		h.t.Fatalf("initialize: %d %s", r.status, r.raw)
	}
	session := r.header.Get("Mcp-Session-Id")
	if session == "" {
		h.t.Fatal("initialize gave no Mcp-Session-Id")
	}
	if r := h.do(token, map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": v2025},
		legacyBody(nil, "notifications/initialized", nil)); r.status != http.StatusAccepted {
		h.t.Fatalf("initialized: %d %s", r.status, r.raw)
	}
	return session
}

func legacyHeaders(session string) map[string]string {
	return map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": v2025}
}

func (h *harness) legacy(token, session, method string, params map[string]any) reply {
	h.t.Helper()
	return h.do(token, legacyHeaders(session), legacyBody(7, method, params))
}

// sse reads a stream answer's messages.
type sse struct {
	t      *testing.T
	events *apitest.EventReader
}

func (h *harness) stream(token string, headers map[string]string, body string) *sse {
	h.t.Helper()
	resp := h.post(token, headers, body)
	h.t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("want a stream, got %d %s: %s", resp.StatusCode, ct, raw)
	}
	return &sse{t: h.t, events: apitest.NewEventReader(h.t, resp.Body)}
}

// next is the next message on the stream (comments skipped).
func (s *sse) next() map[string]any {
	s.t.Helper()
	data, err := s.events.NextData()
	if err != nil {
		s.t.Fatalf("the stream ended: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		s.t.Fatalf("event data is not JSON: %s", data)
	}
	return m
}

// end checks the stream ends after what was read.
func (s *sse) end() {
	s.t.Helper()
	if data, err := s.events.NextData(); err == nil {
		s.t.Fatalf("want the end of the stream, got data: %s", data)
	}
}

// waitWatching waits until the face waits on task id.
func (h *harness) waitWatching(id string) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-h.b.waiting:
			if got == id {
				return
			}
		case <-deadline:
			h.t.Fatalf("nothing waits on %s", id)
		}
	}
}

// at and str read a path of object members and array indexes out of v.
var at, str = jsonpath.At, jsonpath.String

func code(r reply) int {
	n, _ := at(r.body, "error.code").(float64)
	return int(n)
}

// wantError checks an error answer's status and code.
func wantError(t *testing.T, r reply, status, rpcCode int) {
	t.Helper()
	if r.status != status || code(r) != rpcCode {
		t.Fatalf("want %d with error %d, got %d: %s", status, rpcCode, r.status, r.raw)
	}
}
