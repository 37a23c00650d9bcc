package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// TestNoTokenInLogsOrMetrics runs a whole flow, in the console, on an
// answer page and through the API, then reads the server's logs (at debug
// level) and /metrics: no token used on the way appears in either, not the
// JWT, not an answer token, not a hook token, not a token the server did not
// know.
func TestNoTokenInLogsOrMetrics(t *testing.T) {
	tab := browser(t)
	srv := apptest.Embedded(t, app.Config{LogLevel: "debug", WakeBlock: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	jwt := apptest.Token(t, "alice")
	alice := client.New(srv.URL, jwt)
	anyone := client.New(srv.URL, "")

	// The console, signed in with the JWT.
	signIn(t, tab, srv, jwt)

	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "devbox", Label: "secrets"})
	hook, err := alice.CreateHook(ctx, client.CreateHookInput{TaskID: task.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anyone.Post(ctx, hook.URL, []byte(`{"build":"ok"}`), http.Header{"Content-Type": {"application/json"}}); err != nil {
		t.Fatal(err)
	}
	asked, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{
		{RequestID: "console", Prompt: "Answer me in the console?"},
		{RequestID: "page", Prompt: "Answer me on the page?"},
		{RequestID: "api", Prompt: "Answer me through the API?", AllowFreeform: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{}
	for _, r := range asked.InputRequests {
		urls[r.RequestID] = r.AnswerURL
	}
	secrets := map[string]string{"JWT": jwt, "JWT signature": jwt[strings.LastIndexByte(jwt, '.')+1:], "hook token": hook.Token}
	for id, u := range urls {
		secrets["answer token of "+id] = u[strings.LastIndexByte(u, '/')+1:]
	}
	unknown := urls["api"][:len(urls["api"])-6] + "AAAAAA"
	secrets["unknown answer token"] = unknown[strings.LastIndexByte(unknown, '/')+1:]

	// Console: open the task and answer with a click.
	do(t, tab, "answer in the console",
		chromedp.Click(chromedp.CSS(`#tasks button[data-task-id="`+task.TaskID+`"]`), chromedp.RetryInterval(50*time.Millisecond)),
		chromedp.Click(chromedp.CSS(`#detail-cards article[data-request-id="console"] button[data-option-id="yes"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#detail-cards article[data-request-id="console"]`)),
	)
	// Answer page: open, click, see the done page, reload.
	do(t, tab, "answer on the page",
		chromedp.Navigate(urls["page"]),
		chromedp.Click(chromedp.CSS(`button[name="optionId"][value="no"]`)),
		chromedp.WaitVisible(chromedp.ID("answer-result")),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.ID("answer-result")),
		chromedp.Navigate(unknown),
		chromedp.WaitVisible(chromedp.ID("problem")),
	)
	// API: read the request as JSON, answer it, answer again (410), and an
	// unknown token (404).
	for _, u := range []string{urls["api"], unknown} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if _, err := anyone.AnswerInput(ctx, urls["api"], "", "because"); err != nil {
		t.Fatal(err)
	}
	if _, err := anyone.AnswerInput(ctx, urls["api"], "", "again"); !client.IsCode(err, client.CodeInputClosed) {
		t.Fatalf("a second answer: %v", err)
	}
	if _, err := anyone.AnswerInput(ctx, unknown, "yes", ""); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("an unknown token: %v", err)
	}
	done, err := alice.Complete(ctx, task.TaskID, map[string]any{"ok": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(done.InputResponses) != 3 {
		t.Fatalf("answers recorded: %+v", done.InputResponses)
	}
	if _, err := anyone.Post(ctx, hook.URL, []byte(`{}`), nil); !client.IsCode(err, client.CodeHookClosed) {
		t.Fatalf("a post after the end: %v", err)
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	logs := srv.Logs.String()
	for _, route := range []string{`/v1/input/{token}`, `/v1/callback/{token}`, `/v1/tasks/{taskId}/input`, `/console/*`} {
		if !strings.Contains(logs, route) || !strings.Contains(string(metrics), route) {
			t.Errorf("the flow left no trace of %s in the logs and metrics: the scan below proves nothing", route)
		}
	}
	for what, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold the %s", what)
		}
		if strings.Contains(string(metrics), secret) {
			t.Errorf("/metrics holds the %s", what)
		}
	}
}
