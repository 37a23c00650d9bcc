package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/mcp"
)

func TestEnvelopeErrors(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name   string
		body   string
		status int
		code   int
		id     any // the id the error carries, nil for none
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, 400, -32700, nil},
		{"empty body", ``, 400, -32700, nil},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xff\"}", 400, -32700, nil},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, -32600, nil},
		{"not an object", `"ping"`, 400, -32600, nil},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, -32600, nil},
		{"no version", `{"id":1,"method":"ping"}`, 400, -32600, nil},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, -32600, nil},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, -32600, nil},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, 400, -32600, nil},
		{"member twice", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`, 400, -32600, nil},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}`, 400, -32600, nil},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, 400, -32600, nil},
		{"method and result", `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, 400, -32600, nil},
		{"neither", `{"jsonrpc":"2.0","id":1}`, 400, -32600, nil},
		{"params not an object", `{"jsonrpc":"2.0","id":"a","method":"tools/list","params":[1]}`, 200, -32602, "a"},
		{"params of the wrong type", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":5}}`, 200, -32602, 3.0},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`, 200, -32601, 4.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do("alice", nil, c.body)
			wantError(t, r, c.status, c.code)
			if r.body["jsonrpc"] != "2.0" || r.body["id"] != c.id {
				t.Fatalf("want jsonrpc 2.0 and id %v: %s", c.id, r.raw)
			}
		})
	}
}

func TestParamsErrorsNameTheField(t *testing.T) {
	h := newHarness(t)
	r := h.do("alice", nil, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":5}}`)
	if str(r.body, "error.data.details.0.field") != "cursor" {
		t.Fatalf("want the field named: %s", r.raw)
	}
}

func TestOrigin(t *testing.T) {
	h := newHarness(t)
	ping := legacyBody(1, "ping", nil)
	for origin, status := range map[string]int{
		"https://evil.example":              403,
		"null":                              403,
		"http://taskhook.example":           403, // another scheme is another origin
		"https://taskhook.example":          200,
		"https://TASKHOOK.example:443":      200,
		"https://console.example:8443":      200,
		"https://console.example":           403,
		"https://taskhook.example.evil.com": 403,
	} {
		r := h.do("alice", map[string]string{"Origin": origin}, ping)
		if r.status != status {
			t.Errorf("Origin %s: want %d, got %d %s", origin, status, r.status, r.raw)
		}
	}
	if r := h.do("alice", nil, ping); r.status != 200 {
		t.Errorf("no Origin (not a browser): want 200, got %d", r.status)
	}
	// The Origin is checked before anything else, the token included.
	if r := h.do("", map[string]string{"Origin": "https://evil.example"}, ping); r.status != 403 {
		t.Errorf("want 403 before 401, got %d", r.status)
	}
}

func TestUnauthorized(t *testing.T) {
	h := newHarness(t)
	want := `Bearer resource_metadata="https://taskhook.example/.well-known/oauth-protected-resource"`
	r := h.do("", nil, legacyBody(1, "ping", nil))
	if r.status != 401 || r.header.Get("WWW-Authenticate") != want {
		t.Fatalf("want 401 with %s, got %d %q", want, r.status, r.header.Get("WWW-Authenticate"))
	}
	r = h.do("forged", nil, modernBody(1, "server/discover", nil, nil))
	if r.status != 401 || r.header.Get("WWW-Authenticate") != want+`, error="invalid_token"` {
		t.Fatalf("a refused token: want invalid_token, got %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
}

func TestResourceMetadata(t *testing.T) {
	h := newHarness(t)
	resp, err := http.Get(h.srv.URL + mcp.MetadataPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metadata: %d %v", resp.StatusCode, err)
	}
	if doc["resource"] != publicURL+"/mcp" || at(doc, "authorization_servers.0") != "https://issuer.example" ||
		at(doc, "bearer_methods_supported.0") != "header" {
		t.Fatalf("metadata document: %v", doc)
	}
}

func TestHTTPRules(t *testing.T) {
	h := newHarness(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, h.srv.URL+mcp.Path, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: want 405 Allow POST, got %d", method, resp.StatusCode)
		}
	}
	ping := legacyBody(1, "ping", nil)
	if r := h.do("alice", map[string]string{"Content-Type": "text/plain"}, ping); r.status != 415 {
		t.Errorf("text/plain: want 415, got %d", r.status)
	}
	if r := h.do("alice", map[string]string{"Accept": "text/html"}, ping); r.status != 406 {
		t.Errorf("Accept text/html: want 406, got %d", r.status)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`
	if r := h.do("alice", nil, big); r.status != 413 {
		t.Errorf("a body above the limit: want 413, got %d", r.status)
	}
	if r := h.do("alice", nil, ping); r.status != 200 || r.body["result"] == nil {
		t.Errorf("ping: %d %s", r.status, r.raw)
	}
}

func TestModernHeaderRules(t *testing.T) {
	h := newHarness(t)
	call := modernBody(1, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "a"}}, tasksCaps)
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    int
	}{
		{"no version header", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "devbox"}, call, 400, -32020},
		{"version header differs from _meta", map[string]string{"MCP-Protocol-Version": v2025, "Mcp-Method": "tools/call", "Mcp-Name": "devbox"}, call, 400, -32020},
		{"version header nobody serves", map[string]string{"MCP-Protocol-Version": "2026-08-01", "Mcp-Method": "tools/call", "Mcp-Name": "devbox"}, call, 400, -32022},
		{"no Mcp-Method", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Name": "devbox"}, call, 400, -32020},
		{"Mcp-Method differs", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "tools/list", "Mcp-Name": "devbox"}, call, 400, -32020},
		{"Mcp-Method case", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "Tools/Call", "Mcp-Name": "devbox"}, call, 400, -32020},
		{"no Mcp-Name", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "tools/call"}, call, 400, -32020},
		{"Mcp-Name differs", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "tools/call", "Mcp-Name": "other"}, call, 400, -32020},
		{"Mcp-Name bad sentinel", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?!!?="}, call, 400, -32020},
		{"Mcp-Name in base64", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "tools/call", "Mcp-Name": b64("devbox")}, call, 200, 0},
		{"unsupported version", modernHeaders("server/discover", ""), strings.ReplaceAll(modernBody(1, "server/discover", nil, nil), v2026, "2027-01-01"), 400, -32020},
		{"no _meta version", map[string]string{"MCP-Protocol-Version": v2026, "Mcp-Method": "server/discover"}, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, 400, -32602},
		{"no client capabilities", modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, -32602},
		{"tasks/get Mcp-Name is the task id", modernHeaders("tasks/get", "task_x"), modernBody(1, "tasks/get", map[string]any{"taskId": "task_y"}, tasksCaps), 400, -32020},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do("alice", c.headers, c.body)
			if c.code == 0 {
				if r.status != c.status || r.body["error"] != nil {
					t.Fatalf("want %d, got %d %s", c.status, r.status, r.raw)
				}
				return
			}
			wantError(t, r, c.status, c.code)
		})
	}
	// A version nobody serves, the same in the header and _meta.
	body := strings.ReplaceAll(modernBody(1, "server/discover", nil, nil), v2026, "2027-01-01")
	r := h.do("alice", map[string]string{"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "server/discover"}, body)
	wantError(t, r, 400, -32022)
	if at(r.body, "error.data.requested") != "2027-01-01" || at(r.body, "error.data.supported.0") != v2026 {
		t.Fatalf("unsupported version data: %s", r.raw)
	}
}

func TestUnknownMethodIs404UnderModern(t *testing.T) {
	h := newHarness(t)
	for _, method := range []string{"prompts/list", "tasks/result", "tasks/list", "initialize", "ping"} {
		r := h.modern("alice", method, "", map[string]any{"taskId": "task_01"}, tasksCaps)
		wantError(t, r, 404, -32601)
	}
}

func TestNotificationsAreAccepted(t *testing.T) {
	h := newHarness(t)
	for _, body := range []string{legacyBody(nil, "notifications/initialized", nil),
		legacyBody(nil, "notifications/cancelled", map[string]any{"requestId": 3})} {
		resp := h.post("alice", nil, body)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 202 || len(raw) != 0 {
			t.Fatalf("a notification: want 202 with no body, got %d %s", resp.StatusCode, raw)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	h := newHarness(t)
	h.b.down(true)
	for _, r := range []reply{
		h.modern("alice", "tools/list", "", nil, nil),
		h.modern("alice", "tasks/get", "task_01", map[string]any{"taskId": "task_01"}, tasksCaps),
		h.legacy("alice", h.initialize("alice", nil), "tasks/list", nil),
	} {
		wantError(t, r, 503, -32603)
		if r.header.Get("Retry-After") == "" || at(r.body, "error.data.code") != "store_unavailable" {
			t.Fatalf("want the retry hint: %v %s", r.header, r.raw)
		}
	}
}

func TestInternalErrorsAreNotShown(t *testing.T) {
	var logged bytes.Buffer
	h := newHarness(t, func(c *mcp.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logged, nil)) })
	h.b.mu.Lock()
	h.b.broken = errors.New("ERR wrong number of arguments for 'evalsha' command")
	h.b.mu.Unlock()
	r := h.modern("alice", "tools/list", "", nil, nil)
	wantError(t, r, 500, -32603)
	errorID := str(r.body, "error.data.errorId")
	if errorID == "" || strings.Contains(string(r.raw), "evalsha") {
		t.Fatalf("an internal error: an id, never the text: %s", r.raw)
	}
	if !strings.Contains(logged.String(), errorID) || !strings.Contains(logged.String(), "evalsha") {
		t.Fatalf("the log has the error under its id: %s", logged.String())
	}
}

// Any body gets a JSON-RPC answer of the allowed statuses, never a panic.
func FuzzMessage(f *testing.F) {
	for _, seed := range []string{
		legacyBody(1, "ping", nil),
		legacyBody(0, "initialize", map[string]any{"protocolVersion": v2025, "capabilities": map[string]any{"elicitation": map[string]any{}}}),
		modernBody(1, "tools/call", map[string]any{"name": "devbox", "arguments": map[string]any{"repo": "r"}}, tasksCaps),
		modernBody(2, "tasks/update", map[string]any{"taskId": "task_01", "inputResponses": map[string]any{"x": map[string]any{"action": "accept"}}}, tasksCaps),
		`{"jsonrpc":"2.0","id":"taskhook/task_01/deploy","result":{"action":"accept","content":{"optionId":"yes"}}}`,
		`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"2.0","id":1e3,"method":"x"}`, "\xff", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}}`,
	} {
		f.Add(seed, "", "", "")
	}
	f.Add(modernBody(1, "tasks/get", map[string]any{"taskId": "task_01"}, tasksCaps), v2026, "tasks/get", "task_01")
	b := newMemBackend()
	addTools(b)
	handler, err := mcp.New(mcp.Config{Backend: b, Authenticate: authenticate, PublicURL: publicURL})
	if err != nil {
		f.Fatal(err)
	}
	allowed := map[int]bool{200: true, 202: true, 400: true, 404: true, 413: true, 500: true, 503: true}
	f.Fuzz(func(t *testing.T, body, version, method, name string) {
		req := httptest.NewRequest(http.MethodPost, mcp.Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Accept", "application/json")
		for k, v := range map[string]string{"MCP-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name} {
			if v != "" && !strings.ContainsAny(v, "\r\n") {
				req.Header.Set(k, v)
			}
		}
		ctx, cancel := context.WithTimeout(req.Context(), 20*time.Millisecond) // a held call ends with its case
		defer cancel()
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req.WithContext(ctx))
		if !allowed[rec.Code] {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		if rec.Code != 202 && rec.Body.Len() > 0 {
			var m map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("not a JSON-RPC answer: %s", rec.Body.Bytes())
			}
		}
	})
}
