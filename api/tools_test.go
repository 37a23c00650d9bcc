package api_test

import (
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// TestContractTools drives the tool routes over real HTTP, on the embedded
// store, through apitest.Transport: every answer fits the document.
func TestContractTools(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{AllowPrivateTargets: true})
	pub := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	bob := pub.as(apptest.Token(t, "bob"))
	carol := pub.as(apptest.Token(t, "carol"))
	anon := pub.as("")

	tool := func(callers ...string) map[string]any {
		body := map[string]any{
			"title": "Weather", "description": "The weather of a city.",
			"inputSchema": map[string]any{"type": "object", "required": []string{"city"},
				"properties": map[string]any{"city": map[string]any{"type": "string"}}},
			"outputSchema": map[string]any{"type": "object"},
			"endpoint":     map[string]any{"url": "http://127.0.0.1:9/hear"},
		}
		if callers != nil {
			body["callers"] = callers
		}
		return body
	}
	pub.want(pub.do("PUT", "/v1/tools/weather", tool("bob")), 201, "", nil)
	pub.want(pub.do("PUT", "/v1/tools/weather", tool("bob")), 200, "", nil)
	pub.want(pub.do("PUT", "/v1/tools/almanac", tool("*")), 201, "", nil)
	carol.want(carol.do("PUT", "/v1/tools/weather", tool()), 409, "tool_name_taken", nil)
	pub.want(pub.do("PUT", "/v1/tools/bad.name", tool()), 400, "invalid_request", nil)
	pub.want(pub.do("PUT", "/v1/tools/other", map[string]any{"description": "x"}), 400, "invalid_request", nil)
	anon.want(anon.do("PUT", "/v1/tools/weather", tool()), 401, "unauthorized", nil)

	pub.want(pub.do("GET", "/v1/tools/weather", nil), 200, "", nil)
	bob.want(bob.do("GET", "/v1/tools/weather", nil), 200, "", nil)
	carol.want(carol.do("GET", "/v1/tools/weather", nil), 404, "not_found", nil)
	pub.wantTwoPages("/v1/tools?limit=1", 1, "/v1/tools?limit=1&cursor=", 1)
	carol.want(carol.do("GET", "/v1/tools?cursor=nope", nil), 400, "invalid_request", nil)

	var ses session
	bob.want(bob.do("POST", "/v1/sessions", nil), 201, "", &ses)
	call := map[string]any{"sessionId": ses.SessionID, "arguments": map[string]any{"city": "Oslo"}}
	first := bob.want(bob.do("POST", "/v1/tools/weather/call", call, "Idempotency-Key", "call-1"), 201, "", nil)
	bob.wantReplay(first, "/v1/tools/weather/call", call, "call-1")
	bob.want(bob.do("POST", "/v1/tools/weather/call", map[string]any{"sessionId": ses.SessionID, "arguments": map[string]any{"city": 1}}), 400, "invalid_request", nil)
	carol.want(carol.do("POST", "/v1/tools/weather/call", call), 404, "not_found", nil)

	bob.want(bob.do("DELETE", "/v1/tools/weather", nil), 404, "not_found", nil)
	pub.want(pub.do("DELETE", "/v1/tools/weather", nil), 200, "", nil)
	pub.want(pub.do("GET", "/v1/tools/weather", nil), 404, "not_found", nil)
}
