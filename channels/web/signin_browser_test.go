package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/connections/providertest"
)

// TestSigninPageInBrowser opens a task's authorizationUrl in the browser:
// the fake provider agrees at once and sends the browser back, and the
// sign-in ends on the styled page that says so, under the page's policy.
// A redirect for the same attempt again shows the used-link page.
func TestSigninPageInBrowser(t *testing.T) {
	prov := providertest.New(t)
	tab, srv, ctx := start(t, app.Config{ConnectionsFile: providertest.WriteConnectionsFile(t, prov.Connection("devbox", "path", "repo"))})
	alice := srv.Client(t, "alice")

	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "devbox", Label: "Open a pull request"})
	_, pending, err := alice.Authorize(ctx, task.TaskID, "devbox", nil)
	if err != nil || pending == nil {
		t.Fatalf("ask for a token: %+v %v", pending, err)
	}

	do(t, tab, "sign in through the provider",
		chromedp.Navigate(pending.AuthorizationURL),
		chromedp.WaitVisible(chromedp.ID("signin-result")),
	)
	until(t, tab, "the signed-in page", `document.title === "Signed in to devbox · taskhook" &&
		document.getElementById("signin-result").dataset.outcome === "authorized" &&
		document.getElementById("signin-next").textContent === "The task goes on; you can close this tab."`)
	if got := eval[string](t, tab, `getComputedStyle(document.querySelector(".page-card")).borderTopLeftRadius`); got != "10px" {
		t.Fatalf("the stylesheet did not load under the page's policy (card radius %q)", got)
	}
	if got := eval[string](t, tab, `getComputedStyle(document.getElementById("signin-result")).borderTopStyle`); got != "solid" {
		t.Fatalf("the result box is not styled (border %q)", got)
	}
	if path := eval[string](t, tab, `location.pathname + location.search`); path != "/v1/connections/signed-in?connection=devbox&outcome=authorized" {
		t.Fatalf("the page's address: %q", path)
	}
	screenshot(t, tab, "signin-done.png")

	got, err := alice.GetTask(ctx, task.TaskID)
	if err != nil || got.Status != "working" {
		t.Fatalf("the task after the sign-in: %+v %v", got, err)
	}

	// The provider's redirect for the same attempt again: it is used.
	do(t, tab, "open the used link", chromedp.Navigate(prov.Approve(t, pending.AuthorizationURL)),
		chromedp.WaitVisible(chromedp.ID("problem")))
	if title := eval[string](t, tab, `document.title`); title != "Sign-in link already used · taskhook" {
		t.Fatalf("the used link's page: %q", title)
	}
}
