package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// signIn opens the console and signs in with token.
func signIn(t *testing.T, tab context.Context, srv *apptest.Server, token string) {
	t.Helper()
	do(t, tab, "open the console and sign in",
		chromedp.Navigate(srv.URL+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin-button")),
		chromedp.WaitVisible(chromedp.ID("app")),
	)
	until(t, tab, "the token kept in sessionStorage, the page's URL without it",
		`sessionStorage.getItem("taskhook.token") === `+jsString(token)+` && !location.href.includes("ey")`)
}

// TestConsoleAnswersLive signs in to the console, sees a question the test
// asks through the API appear, follows the task live and answers it with a
// click: the task goes back to working, in the page and through the API.
func TestConsoleAnswersLive(t *testing.T) {
	tab := browser(t)
	srv := server(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	alice := srv.Client(t, "alice")

	signIn(t, tab, srv, apptest.Token(t, "alice"))
	if got := eval[string](t, tab, `getComputedStyle(document.querySelector(".topbar")).display`); got != "flex" {
		t.Fatalf("the stylesheet did not load under the page's policy (topbar display %q)", got)
	}

	// Everything from here happens after the page is open.
	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "devbox", Label: "Deploy acme/api"})
	msg := "tests passed"
	if _, err := alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: &msg, Progress: map[string]any{"percent": 80}}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{{
		RequestID: "deploy", Prompt: "Deploy acme/api to staging?",
		Options: []client.Choice{
			{ID: "yes", Label: "Deploy", Style: "primary", Description: "build 2f9c1e"},
			{ID: "no", Label: "Not now", Style: "danger"},
		},
		AllowFreeform: true,
	}}); err != nil {
		t.Fatal(err)
	}

	// The question shows up among those waiting for the signed-in principal.
	inboxCard := `#inbox article[data-task-id="` + task.TaskID + `"][data-request-id="deploy"]`
	do(t, tab, "the question in the inbox", chromedp.WaitVisible(chromedp.CSS(inboxCard+` button[data-option-id="yes"]`)))

	// Open the task: its events follow live.
	do(t, tab, "open the task",
		chromedp.Click(chromedp.CSS(`#tasks button[data-task-id="`+task.TaskID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail-live.live-on`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail-cards article[data-request-id="deploy"] button[data-option-id="yes"]`)),
	)
	until(t, tab, "the task shown as waiting", `document.getElementById("detail-status").dataset.status === "input_required"`)
	if _, err := alice.Message(ctx, task.TaskID, "staging is free", nil); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the message, live",
		`[...document.querySelectorAll('#timeline li[data-type="task.message"] .t-text')].some(e => e.textContent === "staging is free")`)
	screenshot(t, tab, "console.png")

	// Answer with a click.
	do(t, tab, "click Deploy", chromedp.Click(chromedp.CSS(`#detail-cards article[data-request-id="deploy"] button[data-option-id="yes"]`)))
	until(t, tab, "the task shown as working", `document.getElementById("detail-status").dataset.status === "working"`)
	until(t, tab, "the answer in the log, live",
		`[...document.querySelectorAll('#timeline li[data-type="input.resolved"] .t-text')].some(e => e.textContent === "yes")`)
	until(t, tab, "the inbox card gone", `document.querySelector(`+jsString(inboxCard)+`) === null`)

	got, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "working" || len(got.InputResponses) != 1 || got.InputResponses[0] != (client.InputResponse{RequestID: "deploy", OptionID: "yes"}) {
		t.Fatalf("after the click: status %s, answers %+v", got.Status, got.InputResponses)
	}
}

// TestConsoleSignInRefused: a token the service refuses is not kept.
func TestConsoleSignInRefused(t *testing.T) {
	tab := browser(t)
	srv := server(t)
	do(t, tab, "sign in with a bad token",
		chromedp.Navigate(srv.URL+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), "not-a-token"),
		chromedp.Click(chromedp.ID("signin-button")),
		chromedp.WaitVisible(chromedp.ID("signin-error")),
	)
	if kept := eval[bool](t, tab, `sessionStorage.getItem("taskhook.token") !== null`); kept {
		t.Fatal("a refused token was kept")
	}
}
