package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Field string `json:"field"`
		} `json:"details"`
	} `json:"error"`
}

func TestBadInputGetsItsCode(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, storetest.Standalone(t), app.Config{MaxBodyBytes: 4096, JWTAudience: "taskhook"})
	ctx := context.Background()
	good := signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(time.Hour).Unix()}, apptest.Secret)
	cl := client.New(srv.URL, good)
	ses, task := sessionWithTask(t, cl)
	tp := "/v1/tasks/" + task.TaskID
	cases := []struct {
		name, method, path, body, token string
		status                          int
		code, field                     string
	}{
		{"invalid json", "POST", "/v1/sessions", `{"metadata":`, good, 400, "invalid_json", ""},
		{"not an object", "POST", "/v1/sessions", `[1,2]`, good, 400, "invalid_request", "body"},
		{"two values", "POST", "/v1/sessions", `{} {}`, good, 400, "invalid_json", ""},
		{"unknown field", "POST", "/v1/sessions", `{"metdata":{}}`, good, 400, "invalid_request", "metdata"},
		{"wrong type", "POST", "/v1/tasks", `{"sessionId":7}`, good, 400, "invalid_request", "sessionId"},
		{"missing sessionId", "POST", "/v1/tasks", `{"kind":"x"}`, good, 400, "invalid_request", "sessionId"},
		{"metadata not an object", "POST", "/v1/tasks", `{"sessionId":"` + ses.SessionID + `","metadata":[1]}`, good, 400, "invalid_request", "metadata"},
		{"missing text", "POST", tp + "/messages", `{}`, good, 400, "invalid_request", "text"},
		{"missing error", "POST", tp + "/fail", `{}`, good, 400, "invalid_request", "error.message"},
		{"empty progress", "POST", tp + "/progress", `{}`, good, 400, "invalid_request", "statusMessage"},
		{"no requests", "POST", tp + "/input-requests", `{"requests":[]}`, good, 400, "invalid_request", "requests"},
		{"server-filled answerUrl", "POST", tp + "/input-requests", `{"requests":[{"prompt":"x","answerUrl":"http://x"}]}`, good, 400, "invalid_request", "answerUrl"},
		{"bad option style", "POST", tp + "/input-requests", `{"requests":[{"prompt":"x","options":[{"id":"a","label":"A","style":"loud"}]}]}`, good, 400, "invalid_request", "requests[0].options[0].style"},
		{"answer while working", "POST", tp + "/input", `{"responses":[{"requestId":"nope","optionId":"a"}]}`, good, 409, "not_input_required", ""},
		{"bad limit", "GET", "/v1/tasks?limit=1000", "", good, 400, "invalid_request", "limit"},
		{"bad cursor", "GET", "/v1/tasks?cursor=bm9wZQ", "", good, 400, "invalid_request", "cursor"},
		{"bad wait", "GET", tp + "?afterRevision=1&wait=soon", "", good, 400, "invalid_request", "wait"},
		{"bad afterRevision", "GET", tp + "?afterRevision=-3", "", good, 400, "invalid_request", "afterRevision"},
		{"bad event cursor", "GET", tp + "/events?after=abc", "", good, 400, "invalid_request", "after"},
		{"oversized body", "POST", tp + "/progress", `{"statusMessage":"` + strings.Repeat("x", 5000) + `"}`, good, 413, "payload_too_large", ""},
		{"no token", "GET", "/v1/tasks", "", "", 401, "unauthorized", ""},
		{"alg none", "GET", "/v1/tasks", "", unsigned(t), 401, "unauthorized", ""},
		{"expired", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(-time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"wrong key", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(time.Hour).Unix()}, "another-secret-that-is-32-bytes-long!!"), 401, "unauthorized", ""},
		{"wrong audience", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "elsewhere", "exp": time.Now().Add(time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"no exp", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook"}, apptest.Secret), 401, "unauthorized", ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body errorBody
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("%s: not an error body: %s", c.name, raw)
			continue
		}
		if resp.StatusCode != c.status || body.Error.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s (%s)", c.name, resp.StatusCode, body.Error.Code, c.status, c.code, raw)
		}
		if c.field != "" && (len(body.Error.Details) == 0 || body.Error.Details[0].Field != c.field) {
			t.Errorf("%s: details %s, want field %s", c.name, raw, c.field)
		}
		if c.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: no WWW-Authenticate: Bearer", c.name)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", c.name)
		}
	}
	// None of it changed the task.
	after, err := cl.GetTask(ctx, task.TaskID)
	if err != nil || after.Revision != task.Revision {
		t.Fatalf("bad input changed the task: %+v %v", after, err)
	}
}

func signed(t *testing.T, claims jwt.MapClaims, secret string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func unsigned(t *testing.T) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "bad", "aud": "taskhook",
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A wait above the maximum is cut to it, also when given as a huge number of
// seconds: never a 400 saying it is negative.
func TestHugeWaitIsCutToTheMaximum(t *testing.T) {
	t.Parallel()
	srv := apptest.Start(t, storetest.Standalone(t), app.Config{})
	ctx := context.Background()
	tok := apptest.Token(t, "wait-huge")
	cl := client.New(srv.URL, tok)
	_, task := sessionWithTask(t, cl)
	if _, err := cl.Complete(ctx, task.TaskID, "done"); err != nil {
		t.Fatal(err)
	}
	for _, wait := range []string{"1e10", "1e300"} {
		// The task is terminal, so the answer comes at once.
		req, _ := http.NewRequest("GET", srv.URL+"/v1/tasks/"+task.TaskID+"/result?wait="+wait, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("wait=%s: %d %s", wait, resp.StatusCode, raw)
		}
	}
}
