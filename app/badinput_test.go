package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
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
	srv := apptest.Standalone(t, app.Config{MaxBodyBytes: 32 << 10, JWTAudience: "taskhook"})
	ctx := context.Background()
	good := signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(time.Hour).Unix()}, apptest.Secret)
	cl := client.New(srv.URL, good)
	ses, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	tp := "/v1/tasks/" + task.TaskID
	sid := `"sessionId":"` + ses.SessionID + `"`
	// A second task waits for an answer, so its answer URL takes bodies.
	asked, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
	if err == nil {
		asked, err = cl.RequireInput(ctx, asked.TaskID, []client.InputRequest{{Prompt: "ok?", Display: "confirmation"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	answerPath := strings.TrimPrefix(asked.InputRequests[0].AnswerURL, srv.URL)
	nest := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
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
		{"server-filled answerUrl", "POST", tp + "/input-requests", `{"requests":[{"prompt":"x","answerUrl":"http://x"}]}`, good, 400, "invalid_request", "requests[0].answerUrl"},
		{"bad option style", "POST", tp + "/input-requests", `{"requests":[{"prompt":"x","options":[{"id":"a","label":"A","style":"loud"}]}]}`, good, 400, "invalid_request", "requests[0].options[0].style"},
		{"answer while working", "POST", tp + "/input", `{"responses":[{"requestId":"nope","optionId":"a"}]}`, good, 409, "not_input_required", ""},
		{"bad limit", "GET", "/v1/tasks?limit=1000", "", good, 400, "invalid_request", "limit"},
		{"bad cursor", "GET", "/v1/tasks?cursor=bm9wZQ", "", good, 400, "invalid_request", "cursor"},
		{"bad wait", "GET", tp + "?afterRevision=1&wait=soon", "", good, 400, "invalid_request", "wait"},
		{"bad afterRevision", "GET", tp + "?afterRevision=-3", "", good, 400, "invalid_request", "afterRevision"},
		{"bad event cursor", "GET", tp + "/events?after=abc", "", good, 400, "invalid_request", "after"},
		{"oversized body", "POST", tp + "/progress", `{"statusMessage":"` + strings.Repeat("x", 40<<10) + `"}`, good, 413, "payload_too_large", ""},
		// Invalid UTF-8 and unpaired surrogate escapes, in raw JSON values,
		// plain strings and keys.
		{"invalid UTF-8 in input", "POST", "/v1/tasks", `{` + sid + `,"input":"` + "\xff" + `"}`, good, 400, "invalid_request", "input"},
		{"invalid UTF-8 inside metadata", "POST", "/v1/tasks", `{` + sid + `,"metadata":{"a":["ok","` + "\xc3" + `"]}}`, good, 400, "invalid_request", "metadata.a[1]"},
		{"invalid UTF-8 in session metadata", "POST", "/v1/sessions", `{"metadata":{"k":"` + "\xed\xa0\x80" + `"}}`, good, 400, "invalid_request", "metadata.k"},
		{"invalid UTF-8 in a key", "POST", "/v1/sessions", `{"metadata":{"` + "\xff" + `":1}}`, good, 400, "invalid_request", "metadata"},
		{"invalid UTF-8 in progress", "POST", tp + "/progress", `{"progress":{"pct":"` + "\xff" + `"}}`, good, 400, "invalid_request", "progress.pct"},
		{"invalid UTF-8 in data", "POST", tp + "/messages", `{"text":"hi","data":"` + "\xff" + `"}`, good, 400, "invalid_request", "data"},
		{"invalid UTF-8 in text", "POST", tp + "/messages", `{"text":"` + "\xff" + `"}`, good, 400, "invalid_request", "text"},
		{"unpaired surrogate in text", "POST", tp + "/messages", `{"text":"\ud800"}`, good, 400, "invalid_request", "text"},
		{"invalid UTF-8 in a prompt", "POST", tp + "/input-requests", `{"requests":[{"prompt":"` + "\xff" + `"}]}`, good, 400, "invalid_request", "requests[0].prompt"},
		{"invalid UTF-8 in result", "POST", tp + "/complete", `{"result":"` + "\xff" + `"}`, good, 400, "invalid_request", "result"},
		{"invalid UTF-8 in error data", "POST", tp + "/fail", `{"error":{"message":"m","data":["` + "\xff" + `"]}}`, good, 400, "invalid_request", "error.data[0]"},
		{"invalid UTF-8 in an answer", "POST", answerPath, `{"text":"` + "\xff" + `"}`, "", 400, "invalid_request", "text"},
		// Nesting.
		{"input nested 9999 deep", "POST", "/v1/tasks", `{` + sid + `,"input":` + nest(9999) + `}`, good, 400, "invalid_request", "input"},
		{"metadata nested 65 deep", "POST", "/v1/sessions", `{"metadata":{"a":` + nest(64) + `}}`, good, 400, "invalid_request", "metadata"},
		{"result nested 100 deep", "POST", tp + "/complete", `{"result":` + nest(100) + `}`, good, 400, "invalid_request", "result"},
		// Field names match exactly.
		{"SESSIONID overriding sessionId", "POST", "/v1/tasks", `{` + sid + `,"SESSIONID":"ses_other"}`, good, 400, "invalid_request", "SESSIONID"},
		{"sessionId in another case", "POST", "/v1/tasks", `{"SessionId":"` + ses.SessionID + `"}`, good, 400, "invalid_request", "SessionId"},
		{"PROMPT", "POST", tp + "/input-requests", `{"requests":[{"PROMPT":"x"}]}`, good, 400, "invalid_request", "requests[0].PROMPT"},
		{"option ID", "POST", tp + "/input-requests", `{"requests":[{"prompt":"x","options":[{"ID":"a","label":"A"}]}]}`, good, 400, "invalid_request", "requests[0].options[0].ID"},
		{"error MESSAGE", "POST", tp + "/fail", `{"error":{"MESSAGE":"m"}}`, good, 400, "invalid_request", "error.MESSAGE"},
		{"verify SECRET", "POST", "/v1/hooks", `{"taskId":"` + task.TaskID + `","verify":{"scheme":"slack","SECRET":"s"}}`, good, 400, "invalid_request", "verify.SECRET"},
		{"TaskId", "POST", "/v1/hooks", `{"TaskId":"` + task.TaskID + `"}`, good, 400, "invalid_request", "TaskId"},
		{"REQUESTID", "POST", tp + "/input", `{"responses":[{"REQUESTID":"q","optionId":"a"}]}`, good, 400, "invalid_request", "responses[0].REQUESTID"},
		{"task cancel Reason", "POST", tp + "/cancel", `{"Reason":"r"}`, good, 400, "invalid_request", "Reason"},
		{"session cancel REASON", "POST", "/v1/sessions/" + ses.SessionID + "/cancel", `{"REASON":"r"}`, good, 400, "invalid_request", "REASON"},
		{"answer OPTIONID", "POST", answerPath, `{"OPTIONID":"yes"}`, "", 400, "invalid_request", "OPTIONID"},
		{"no token", "GET", "/v1/tasks", "", "", 401, "unauthorized", ""},
		{"alg none", "GET", "/v1/tasks", "", unsigned(t), 401, "unauthorized", ""},
		{"expired", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(-time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"wrong key", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "exp": time.Now().Add(time.Hour).Unix()}, "another-secret-that-is-32-bytes-long!!"), 401, "unauthorized", ""},
		{"wrong audience", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "elsewhere", "exp": time.Now().Add(time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"no exp", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook"}, apptest.Secret), 401, "unauthorized", ""},
		{"lifetime above the maximum age", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook",
			"iat": time.Now().Unix(), "exp": time.Now().Add(25 * time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"a year-long token", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook",
			"iat": time.Now().Add(-time.Hour).Unix(), "exp": time.Now().AddDate(1, 0, 0).Unix()}, apptest.Secret), 401, "unauthorized", ""},
		{"no iat, exp two days ahead", "GET", "/v1/tasks", "", signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook",
			"exp": time.Now().Add(48 * time.Hour).Unix()}, apptest.Secret), 401, "unauthorized", ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, raw := apptest.Fetch(t, http.DefaultClient, req)
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
		if c.status == 401 && c.token != "" && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: WWW-Authenticate %q has no error=\"invalid_token\"", c.name, resp.Header.Get("WWW-Authenticate"))
		}
		if strings.Contains(c.name, "maximum age") || strings.Contains(c.name, "year-long") || strings.Contains(c.name, "two days") {
			if !strings.Contains(body.Error.Message, "maximum age") {
				t.Errorf("%s: message %q does not name the maximum age", c.name, body.Error.Message)
			}
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", c.name)
		}
	}
	// A token of exactly the maximum age, as the development token is, works.
	day := signed(t, jwt.MapClaims{"sub": "bad", "aud": "taskhook", "iat": time.Now().Unix(),
		"exp": time.Now().Add(24 * time.Hour).Unix()}, apptest.Secret)
	if _, err := client.New(srv.URL, day).ListTasks(ctx, client.ListTasksParams{}); err != nil {
		t.Fatalf("a token of the maximum age: %v", err)
	}
	// None of it changed or stored anything.
	for _, before := range []*client.Task{task, asked} {
		after, err := cl.GetTask(ctx, before.TaskID)
		if err != nil || after.Revision != before.Revision {
			t.Fatalf("bad input changed the task: %+v %v", after, err)
		}
	}
	sessions, tasks := owned(t, ctx, cl)
	if len(sessions) != 1 || sessions[0].Status != "active" {
		t.Fatalf("bad input changed the sessions: %+v", sessions)
	}
	if len(tasks) != 2 {
		t.Fatalf("bad input stored a task: %+v", tasks)
	}
	hooks, err := cl.ListHooks(ctx, client.ListHooksParams{})
	if err != nil || len(hooks.Items) != 0 {
		t.Fatalf("bad input stored a hook: %+v %v", hooks, err)
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
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	cl := srv.Client(t, "wait-huge")
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	if _, err := cl.Complete(ctx, task.TaskID, "done"); err != nil {
		t.Fatal(err)
	}
	for _, wait := range []string{"1e10", "1e300"} {
		// The task is terminal, so the answer comes at once.
		status, raw := callAs(t, srv, "wait-huge", "GET", "/v1/tasks/"+task.TaskID+"/result?wait="+wait, "")
		if status != http.StatusOK {
			t.Fatalf("wait=%s: %d %s", wait, status, raw)
		}
	}
}
