package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

type answerView struct {
	TaskID    string `json:"taskId"`
	TaskKind  string `json:"taskKind"`
	TaskLabel string `json:"taskLabel"`
	RequestID string `json:"requestId"`
	Status    string `json:"status"`
	Prompt    string `json:"prompt"`
	Options   []struct {
		ID string `json:"id"`
	} `json:"options"`
	Answer *struct {
		OptionID   string `json:"optionId"`
		Text       string `json:"text"`
		AnsweredAt string `json:"answeredAt"`
		Via        string `json:"via"`
	} `json:"answer"`
}

const (
	htmlAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	formType   = "application/x-www-form-urlencoded"
)

// wantPageHeaders checks the headers every answer of an answer URL carries.
func wantPageHeaders(t *testing.T, r reply, what string) {
	t.Helper()
	for name, want := range map[string]string{
		"Cache-Control":           "no-store",
		"Referrer-Policy":         "no-referrer",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("%s: %s = %q, want %q", what, name, got, want)
		}
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Errorf("%s: sets a cookie", what)
	}
}

// TestContractAnswerPage drives GET /v1/input/{token} (JSON and the HTML
// page) and the page's form post, through apitest.Transport.
func TestContractAnswerPage(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	alice := newCaller(t, srv.URL, apptest.Token(t, "alice"))
	anon := alice.as("")
	// The page's form post is answered with a redirect: see it, not where it goes.
	anon.hc = &http.Client{Transport: anon.hc.Transport, Timeout: anon.hc.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var ses struct{ SessionID string }
	alice.want(alice.do("POST", "/v1/sessions", nil), 201, "", &ses)
	ask := func(label string, req map[string]any) (task, string) {
		t.Helper()
		var tk task
		alice.want(alice.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "kind": "devbox", "label": label}), 201, "", &tk)
		alice.want(alice.do("POST", "/v1/tasks/"+tk.TaskID+"/input-requests", map[string]any{"requests": []any{req}}), 200, "", &tk)
		return tk, strings.TrimPrefix(tk.InputRequests[0].AnswerURL, srv.URL)
	}
	tk, page := ask("Deploy <api>", map[string]any{"requestId": "ship", "prompt": "Ship it?", "allowFreeform": true,
		"options": []any{map[string]any{"id": "yes", "label": "Ship", "style": "primary"}, map[string]any{"id": "no", "label": "Hold"}}})
	other, _ := ask("Other task", map[string]any{"requestId": "secret", "prompt": "Another question"})

	// JSON: the one request, open.
	var v answerView
	r := anon.want(anon.do("GET", page, nil), 200, "", &v)
	wantPageHeaders(t, r, "GET json")
	if v.TaskID != tk.TaskID || v.RequestID != "ship" || v.Status != "open" || v.Prompt != "Ship it?" ||
		v.TaskLabel != "Deploy <api>" || v.TaskKind != "devbox" || len(v.Options) != 2 || v.Answer != nil {
		t.Fatalf("view: %+v", v)
	}

	// HTML: the prompt, a button per option, the text box; nothing of the other task.
	r = anon.want(anon.do("GET", page, nil, "Accept", htmlAccept), 200, "", nil)
	wantPageHeaders(t, r, "GET html")
	body := string(r.body)
	for _, want := range []string{"Ship it?", `name="optionId" value="yes"`, `name="optionId" value="no"`, `name="text"`,
		"Deploy &lt;api&gt;", `<form method="post"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	for _, leak := range []string{"<script", "style=", other.TaskID, "Another question", "ans_"} {
		if strings.Contains(body, leak) {
			t.Errorf("the page holds %q", leak)
		}
	}

	// JSON sent as a form by a client that does not ask for HTML (curl -d)
	// is judged as JSON.
	anon.want(anon.do("POST", page, `{"optionId":"maybe"}`, "Content-Type", formType), 400, "invalid_request", nil)

	// A GET never answers.
	var now task
	alice.want(alice.do("GET", "/v1/tasks/"+tk.TaskID, nil), 200, "", &now)
	if now.Status != "input_required" || now.Revision != tk.Revision {
		t.Fatalf("after the GETs: %s revision %d, want input_required revision %d", now.Status, now.Revision, tk.Revision)
	}

	// A refused form answer shows the form again, with the reason.
	r = anon.want(anon.do("POST", page, "optionId=maybe", "Content-Type", formType, "Accept", htmlAccept), 400, "", nil)
	wantPageHeaders(t, r, "POST form refused")
	if !strings.Contains(string(r.body), "answer-error") || !strings.Contains(string(r.body), `value="yes"`) {
		t.Errorf("the refused answer's page: %s", r.body)
	}

	// The form answers, and sends the browser back to the page.
	r = anon.want(anon.do("POST", page, "optionId=yes", "Content-Type", formType, "Accept", htmlAccept), 303, "", nil)
	wantPageHeaders(t, r, "POST form")
	if loc := r.header.Get("Location"); loc != page {
		t.Errorf("Location %q, want the page", loc)
	}
	v = answerView{}
	r = anon.want(anon.do("GET", page, nil), 200, "", &v)
	if v.Status != "answered" || v.Answer == nil || v.Answer.OptionID != "yes" || v.Prompt != "Ship it?" ||
		v.Answer.Via != "answer_link" || v.Answer.AnsweredAt == "" {
		t.Fatalf("answered view: %+v", v)
	}
	if strings.Contains(string(r.body), "answeredBy") {
		t.Errorf("the view says who answered: %s", r.body)
	}
	r = anon.want(anon.do("GET", page, nil, "Accept", htmlAccept), 200, "", nil)
	if !strings.Contains(string(r.body), "Answered.") || !strings.Contains(string(r.body), "<strong>Ship</strong>") ||
		!strings.Contains(string(r.body), "Answered through an answer link at 20") || strings.Contains(string(r.body), "<form") {
		t.Errorf("the answered page: %s", r.body)
	}
	alice.want(alice.do("GET", "/v1/tasks/"+tk.TaskID, nil), 200, "", &now)
	if now.Status != "working" || len(now.InputResponses) != 1 {
		t.Fatalf("after the form answer: %+v", now)
	}

	// A second post of the form (a double click) lands on the page; JSON is 410.
	anon.want(anon.do("POST", page, "optionId=no", "Content-Type", formType, "Accept", htmlAccept), 303, "", nil)
	anon.want(anon.do("POST", page, map[string]any{"optionId": "no"}), 410, "input_closed", nil)

	// Closed: the task ended before an answer.
	closedTask, closedPage := ask("", map[string]any{"requestId": "late", "prompt": "Too late?"})
	alice.want(alice.do("POST", "/v1/tasks/"+closedTask.TaskID+"/cancel", nil), 200, "", nil)
	v = answerView{}
	r = anon.want(anon.do("GET", closedPage, nil), 200, "", &v)
	wantPageHeaders(t, r, "GET closed")
	if v.Status != "closed" || v.Prompt != "Too late?" || v.Answer != nil || v.TaskLabel != "" {
		t.Fatalf("closed view: %+v", v)
	}
	r = anon.want(anon.do("GET", closedPage, nil, "Accept", htmlAccept), 200, "", nil)
	if !strings.Contains(string(r.body), "This question is closed.") || strings.Contains(string(r.body), "<form") {
		t.Errorf("the closed page: %s", r.body)
	}
	anon.want(anon.do("POST", closedPage, "optionId=yes", "Content-Type", formType, "Accept", htmlAccept), 303, "", nil)

	// Unknown and malformed tokens: 404, as JSON or as a page.
	for _, bad := range []string{"/v1/input/ans_00nope", "/v1/input/whk_x", page + "x"} {
		r = anon.want(anon.do("GET", bad, nil), 404, "not_found", nil)
		wantPageHeaders(t, r, "GET unknown")
		r = anon.want(anon.do("GET", bad, nil, "Accept", htmlAccept), 404, "", nil)
		wantPageHeaders(t, r, "GET unknown html")
		if !strings.Contains(string(r.body), "Link not found") {
			t.Errorf("the 404 page: %s", r.body)
		}
		r = anon.want(anon.do("POST", bad, "optionId=yes", "Content-Type", formType, "Accept", htmlAccept), 404, "", nil)
		if !strings.Contains(string(r.body), "Link not found") {
			t.Errorf("the 404 page of a post: %s", r.body)
		}
	}
}
