package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/connections/providertest"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// phone sizes the tab like a phone held upright: 390 CSS pixels wide, a
// touch screen.
func phone(t *testing.T, tab context.Context) {
	t.Helper()
	do(t, tab, "a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
}

// laptop sizes the tab like a laptop's screen again.
func laptop(t *testing.T, tab context.Context) {
	t.Helper()
	do(t, tab, "a laptop's screen", chromedp.EmulateViewport(1280, 860))
}

// openAt loads the console afresh at route (a whole page load, as a link
// from elsewhere or a bookmark gives), signed in already in this tab.
func openAt(t *testing.T, tab context.Context, srv *apptest.Server, route string) {
	t.Helper()
	do(t, tab, "open the console at "+route,
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(srv.URL+"/console/"+route),
		chromedp.WaitVisible(chromedp.ID("app")),
	)
}

// inView is a condition: the element sel is shown and its top is within
// the window.
func inView(sel string) string {
	return `(() => { const e = document.querySelector(` + jsString(sel) + `);
		if (!e || e.offsetParent === null) return false;
		const r = e.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.top < innerHeight; })()`
}

// text is an expression: the visible text of the element sel, "" when
// there is none.
func text(sel string) string {
	return `((document.querySelector(` + jsString(sel) + `) || {}).innerText || "")`
}

// taskShown is a condition: the console shows the task id with status.
func taskShown(id, status string) string {
	return `location.hash === "#/tasks/` + id + `" && !document.getElementById("task-view").classList.contains("hidden") &&
		document.getElementById("detail-meta").textContent.includes("` + id + `") &&
		document.getElementById("detail-status").dataset.status === "` + status + `"`
}

// callAPI calls the API as JSON with token and decodes the answer into a
// map: what the console reads, field for field.
func callAPI(t *testing.T, ctx context.Context, srv *apptest.Server, token, method, path string, body any) map[string]any {
	t.Helper()
	var in bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&in).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, &in)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %v %v", method, path, resp.StatusCode, out, err)
	}
	return out
}

// TestConsoleDeepLinks: a task's address opens it from a fresh load and
// after a reload; its session is named by its label and opens at its own
// address; back and forward move between the two.
func TestConsoleDeepLinks(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{})
	alice := srv.Client(t, "alice")
	ses, err := alice.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"label": "Nightly build", "repo": "acme/api"}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "ci", Label: "Build acme/api",
		Input: map[string]any{"repo": "acme/api", "ref": "main"}})
	if err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, srv, apptest.Token(t, "alice"))
	until(t, tab, "the session named by its label", `(() => {
		const row = document.querySelector('#sessions a[data-session-id="`+ses.SessionID+`"]');
		return row !== null && row.querySelector(".name").textContent === "Nightly build"; })()`)

	openAt(t, tab, srv, "#/tasks/"+task.TaskID)
	until(t, tab, "the task, from its address", taskShown(task.TaskID, "working")+` &&
		document.getElementById("detail-title").textContent === "Build acme/api" &&
		document.querySelector('#detail-payloads [data-payload="input"] pre').textContent.includes('"ref": "main"')`)
	do(t, tab, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("task-view")))
	until(t, tab, "the task again after the reload", taskShown(task.TaskID, "working")+` &&
		document.getElementById("detail-live").classList.contains("live-on")`)

	// The task names its session by its label; the link opens the session.
	until(t, tab, "the session's label beside the task", `[...document.querySelectorAll("#detail-meta a")].some(a =>
		a.textContent === "Nightly build" && a.getAttribute("href") === "#/sessions/`+ses.SessionID+`")`)
	do(t, tab, "open the session", chromedp.Click(chromedp.CSS(`#detail-meta a[href^="#/sessions/"]`)))
	sessionShown := `location.hash === "#/sessions/` + ses.SessionID + `" && document.getElementById("session-title").textContent === "Nightly build" &&
		document.querySelector('#session-tasks a[data-task-id="` + task.TaskID + `"]') !== null`
	until(t, tab, "the session at its address", sessionShown)
	do(t, tab, "back", chromedp.Evaluate[chromedp.Void](`history.back()`))
	until(t, tab, "the task after back", taskShown(task.TaskID, "working"))
	do(t, tab, "forward", chromedp.Evaluate[chromedp.Void](`history.forward()`))
	until(t, tab, "the session after forward", sessionShown)
	do(t, tab, "reload the session", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("session-view")))
	until(t, tab, "the session after a reload", sessionShown)

	// The owner cancels the session from its view, after confirming: its
	// task ends with it.
	do(t, tab, "cancel the session",
		chromedp.Click(chromedp.ID("session-cancel")),
		chromedp.SendKeys(chromedp.ID("session-cancel-reason"), "nightly builds paused"),
		chromedp.Click(chromedp.ID("session-cancel-confirm")),
	)
	until(t, tab, "the session and its task cancelled", `document.getElementById("session-status-badge").dataset.status === "cancelled" &&
		document.getElementById("session-cancel") === null &&
		document.querySelector('#session-tasks a[data-task-id="`+task.TaskID+`"]').dataset.status === "cancelled"`)
	got, err := alice.GetTask(ctx, task.TaskID)
	if err != nil || got.Status != "cancelled" {
		t.Fatalf("the task after the session's cancel: %+v %v", got, err)
	}
}

// TestConsoleOpensTaskInView: on a laptop a task opened from far down the
// list is brought into view; on a phone it is a screen of its own, at the
// top, the lists out of the way and a Back that returns to them.
func TestConsoleOpensTaskInView(t *testing.T) {
	tab, srv, ctx := startOn(t, storetest.Standalone(t), app.Config{})
	alice := srv.Client(t, "alice")
	ses := apptest.Session(t, ctx, alice)
	first, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "ci", Label: "Test acme/api"})
	if err != nil {
		t.Fatal(err)
	}
	oldest := first.TaskID // the lists are newest first: the last row
	apptest.StartTasks(t, ctx, alice, ses.SessionID, 29)
	msg := "running 412 tests"
	if _, err := alice.Progress(ctx, oldest, client.ProgressInput{StatusMessage: &msg, Progress: map[string]any{"percent": 40}}); err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, srv, apptest.Token(t, "alice"))
	row := `#tasks a[data-task-id="` + oldest + `"]`

	t.Run("laptop", func(t *testing.T) {
		do(t, tab, "scroll down to the oldest task",
			chromedp.WaitVisible(chromedp.CSS(row)), chromedp.ScrollIntoView(chromedp.CSS(row)))
		if !eval[bool](t, tab, `document.getElementById("detail").getBoundingClientRect().bottom < 0`) {
			t.Fatal("the page did not scroll past the detail: the check below proves nothing")
		}
		do(t, tab, "open it", chromedp.Click(chromedp.CSS(row)))
		until(t, tab, "the task in view", taskShown(oldest, "working")+` && `+inView("#detail-title"))
	})

	t.Run("phone", func(t *testing.T) {
		do(t, tab, "back to the lists", chromedp.Evaluate[chromedp.Void](`location.hash = "#/"`))
		phone(t, tab)
		defer laptop(t, tab)
		until(t, tab, "the lists alone", `document.getElementById("detail").offsetParent === null`)
		do(t, tab, "open the oldest task", chromedp.ScrollIntoView(chromedp.CSS(row)), chromedp.Click(chromedp.CSS(row)))
		until(t, tab, "the task as its own screen", taskShown(oldest, "working")+` && `+inView("#back")+` && `+inView("#detail-title")+` &&
			document.getElementById("side").offsetParent === null && document.getElementById("detail-message").textContent === "running 412 tests"`)
		if w := eval[float64](t, tab, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the task's screen is %v px wide on a 390 px phone", w)
		}
		screenshot(t, tab, "console-phone.png")
		do(t, tab, "back", chromedp.Click(chromedp.ID("back")))
		until(t, tab, "the lists again, the row in view", `location.hash === "#/" || location.hash === ""`)
		until(t, tab, "the row in view", inView(row))
	})
}

// shownPercent matches the progress payload's 90 percent as a page would
// show it ("90%", "90 %", or the payload itself), and not a 90 inside an id.
var shownPercent = regexp.MustCompile(`(^|[^0-9A-Za-z])90\s?%|"percent"`)

// TestConsoleEndedTasks: a task that ended shows how it ended, in its view
// and in the list, and no progress of when it ran; the owner cancels a
// task from its view, with a reason, after confirming.
func TestConsoleEndedTasks(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{})
	alice := srv.Client(t, "alice")
	ses := apptest.Session(t, ctx, alice)
	running := "running 412 tests"
	started := func(label string) string {
		task, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "ci", Label: label})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: &running, Progress: map[string]any{"percent": 90}}); err != nil {
			t.Fatal(err)
		}
		return task.TaskID
	}
	done, failed, cancelled := started("Test suite"), started("Lint"), started("Nightly")
	suites := map[string]any{}
	for i := range 20 {
		suites[fmt.Sprintf("suite-%02d", i)] = map[string]any{"passed": 20 + i, "failed": 0}
	}
	if _, err := alice.Complete(ctx, done, map[string]any{"passed": 412, "failed": 0, "suites": suites}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Fail(ctx, failed, "3 lint errors", map[string]any{"files": []string{"a.go", "b.go"}}); err != nil {
		t.Fatal(err)
	}
	watchPolicy(t, tab)
	signIn(t, tab, srv, apptest.Token(t, "alice"))

	// The list says how each ended; the one still running shows progress.
	sub := func(id string) string { return text(`#tasks a[data-task-id="` + id + `"] .sub`) }
	until(t, tab, "the outcomes in the list", sub(done)+`.startsWith("Result: {") && `+sub(done)+`.includes('"passed":412') &&
		`+sub(failed)+` === "Failed: 3 lint errors" && `+sub(cancelled)+` === "`+running+`"`)

	// The completed task: its result, folded as it is long, and no progress.
	outside := `Array.from(document.getElementById("task-view").children).filter(c => c.id !== "detail-events").map(c => c.innerText).join("\n")`
	openAt(t, tab, srv, "#/tasks/"+done)
	until(t, tab, "the result", taskShown(done, "completed")+` &&
		document.querySelector("#detail-outcome strong").textContent === "Completed" &&
		document.querySelector('#detail-outcome .json-view[data-name="result"] .json-preview').innerText.includes('"passed": 412') &&
		document.querySelector('#detail-outcome .json-view[data-name="result"] details:not([open])') !== null &&
		document.querySelector('#detail-outcome .json-view .btn-copy') !== null`)
	until(t, tab, "time in each status, from the log", `document.querySelector('#detail-durations .legend li[data-status="working"]') !== null`)
	if got := eval[string](t, tab, outside); strings.Contains(got, running) || shownPercent.MatchString(got) {
		t.Fatalf("a completed task shows its progress:\n%s", got)
	}
	if eval[bool](t, tab, `document.getElementById("detail-progress").offsetParent !== null`) {
		t.Fatal("a completed task shows a progress bar")
	}
	do(t, tab, "unfold the result", chromedp.Click(chromedp.CSS(`#detail-outcome details summary`)))
	until(t, tab, "the whole result", `document.querySelector("#detail-outcome details[open] pre").innerText.includes('"suite-19"')`)
	screenshot(t, tab, "console-completed.png")

	// The failed one: its error and its data.
	openAt(t, tab, srv, "#/tasks/"+failed)
	until(t, tab, "the error", taskShown(failed, "failed")+` &&
		document.querySelector("#detail-outcome .outcome-text").textContent === "3 lint errors" &&
		document.querySelector('#detail-outcome .json-view[data-name="error data"]').innerText.includes('"b.go"')`)
	if got := eval[string](t, tab, outside); strings.Contains(got, running) {
		t.Fatalf("a failed task shows its progress:\n%s", got)
	}

	// Cancel the running one from its view: the button asks first.
	openAt(t, tab, srv, "#/tasks/"+cancelled)
	until(t, tab, "the running task with its progress", taskShown(cancelled, "working")+` &&
		document.getElementById("detail-message").textContent === "`+running+`" && document.getElementById("detail-bar").value === 90`)
	do(t, tab, "cancel, with a reason",
		chromedp.Click(chromedp.ID("task-cancel")),
		chromedp.WaitVisible(chromedp.ID("task-cancel-confirm")),
		chromedp.SendKeys(chromedp.ID("task-cancel-reason"), "superseded by the 14:00 run"),
		chromedp.Click(chromedp.ID("task-cancel-confirm")),
	)
	until(t, tab, "the cancel reason, no progress", taskShown(cancelled, "cancelled")+` &&
		document.querySelector("#detail-outcome .outcome-text").textContent === "superseded by the 14:00 run" &&
		document.getElementById("task-cancel") === null && document.getElementById("detail-progress").offsetParent === null`)
	if got := eval[string](t, tab, outside); strings.Contains(got, running) {
		t.Fatalf("a cancelled task shows its progress:\n%s", got)
	}
	got, err := alice.GetTask(ctx, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "cancelled" || got.CancelReason != "superseded by the 14:00 run" {
		t.Fatalf("after the cancel: %s %q", got.Status, got.CancelReason)
	}
	do(t, tab, "back to the lists", chromedp.Evaluate[chromedp.Void](`location.hash = "#/"`))
	until(t, tab, "the reason in the list", sub(cancelled)+` === "Cancelled: superseded by the 14:00 run"`)
	policyKept(t, tab)
}

// TestConsoleSignInRequest: a task waiting for a provider sign-in shows a
// card with a Sign in link, in the inbox and in the task's view; following
// it signs in at the fake provider in a new tab and the task goes on.
func TestConsoleSignInRequest(t *testing.T) {
	prov := providertest.New(t)
	tab, srv, ctx := start(t, app.Config{
		ConnectionsFile: providertest.WriteConnectionsFile(t, prov.Connection("devbox", "path", "repo")),
		VaultKeys:       "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))),
	})
	alice := srv.Client(t, "alice")
	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "devbox", Label: "Open a pull request"})
	_, pending, err := alice.Authorize(ctx, task.TaskID, "devbox", nil)
	if err != nil || pending == nil {
		t.Fatalf("Authorize: %+v %v", pending, err)
	}
	signIn(t, tab, srv, apptest.Token(t, "alice"))

	card := func(where, id string) string {
		return where + ` article[data-kind="authorization"][data-task-id="` + id + `"]`
	}
	link := func(where string) string { return card(where, task.TaskID) + ` a[data-signin="devbox"]` }
	checkLink := func(where, id, url string) {
		t.Helper()
		until(t, tab, "the Sign in link in "+where, `(() => { const a = document.querySelector(`+jsString(card(where, id)+` a[data-signin="devbox"]`)+`);
			return a !== null && a.offsetParent !== null && a.href === `+jsString(url)+` && a.target === "_blank" &&
				a.relList.contains("noopener") && a.relList.contains("noreferrer") && a.innerText.startsWith("Sign in"); })()`)
	}
	checkLink("#inbox", task.TaskID, pending.AuthorizationURL)
	if eval[bool](t, tab, `document.getElementById("inbox-empty").offsetParent !== null`) {
		t.Fatal("the inbox says nothing is open while a sign-in is")
	}
	until(t, tab, "the list says what the task waits for", text(`#tasks a[data-task-id="`+task.TaskID+`"] .sub`)+` === "Waiting for a sign-in"`)
	openAt(t, tab, srv, "#/tasks/"+task.TaskID)
	until(t, tab, "the task waiting", taskShown(task.TaskID, "input_required")+` && document.getElementById("detail-live").classList.contains("live-on")`)
	checkLink("#detail-cards", task.TaskID, pending.AuthorizationURL)
	screenshot(t, tab, "console-signin.png")

	// The click opens the provider in a new tab, which approves at once and
	// lands on the service's callback: the task goes on, in this tab too.
	do(t, tab, "click Sign in", chromedp.Click(chromedp.CSS(link("#detail-cards"))))
	until(t, tab, "the task working again, the card gone", taskShown(task.TaskID, "working")+` &&
		document.querySelector(`+jsString(link("#detail-cards"))+`) === null`)
	until(t, tab, "the sign-in in the log", `[...document.querySelectorAll('#timeline li[data-type="authorization.completed"] .t-text')].some(e =>
		e.textContent === "devbox: authorized")`)
	// The provider's tab took the front: the console refreshes its lists as
	// soon as it is looked at again.
	if _, err := chromedp.Call(tab, page.BringToFront, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the inbox card gone", `document.querySelector(`+jsString(link("#inbox"))+`) === null`)
	tok, again, err := alice.Authorize(ctx, task.TaskID, "devbox", nil)
	if err != nil || again != nil || tok == nil || !prov.Active(tok.AccessToken) {
		t.Fatalf("after the sign-in in the console: %+v %+v %v", tok, again, err)
	}

	// A platform's task that acts for bob: bob, opening its address, gets
	// the link; the platform sees what the task waits for but no link, as
	// the account it signed in with would be kept as bob's.
	platformToken := apptest.Token(t, "platform", "delegate")
	platform := client.New(srv.URL, platformToken)
	_, forBob := apptest.SessionWithTask(t, ctx, platform, client.CreateTaskInput{Label: "Review for bob", Requester: "bob"})
	_, bobs, err := platform.Authorize(ctx, forBob.TaskID, "devbox", nil)
	if err != nil || bobs == nil {
		t.Fatalf("Authorize for bob: %+v %v", bobs, err)
	}
	do(t, tab, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token")))
	signIn(t, tab, srv, apptest.Token(t, "bob"))
	openAt(t, tab, srv, "#/tasks/"+forBob.TaskID)
	checkLink("#detail-cards", forBob.TaskID, bobs.AuthorizationURL)
	do(t, tab, "sign out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token")))
	signIn(t, tab, srv, platformToken)
	until(t, tab, "the platform's card: waiting for bob, no link", `(() => { const c = document.querySelector(`+jsString(card("#inbox", forBob.TaskID))+`);
		return c !== null && c.querySelector('[data-waiting-for="bob"]') !== null && c.querySelector("a[data-signin]") === null; })()`)
}

// TestConsoleShowsWhoAnswered: each answer of a task is listed with the
// question, the option chosen or the text, who answered, through what and
// when; the task's record says so once the server records it, and the
// console says what it knows (its own answers, when from the log) before.
func TestConsoleShowsWhoAnswered(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{})
	alice := srv.Client(t, "alice")
	token := apptest.Token(t, "alice")
	ses, err := alice.CreateSession(ctx, client.CreateSessionInput{Metadata: map[string]any{"label": "Release 2.4"}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "release", Label: "Ship 2.4.0",
		Input: map[string]any{"version": "2.4.0", "channels": []string{"stable"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{
		{RequestID: "ship", Prompt: "Ship 2.4.0 to stable?", Options: []client.Choice{
			{ID: "yes", Label: "Ship it", Style: "primary"}, {ID: "no", Label: "Hold", Style: "danger"}}},
		{RequestID: "notes", Prompt: "Anything for the release notes?", Display: "text"},
	}); err != nil {
		t.Fatal(err)
	}
	watchPolicy(t, tab)
	signIn(t, tab, srv, token)
	openAt(t, tab, srv, "#/tasks/"+task.TaskID)
	until(t, tab, "the two questions", taskShown(task.TaskID, "input_required")+` &&
		document.querySelectorAll("#detail-cards article").length === 2 && document.getElementById("detail-live").classList.contains("live-on")`)

	// One answer in the console, one through the API.
	do(t, tab, "click Ship it", chromedp.Click(chromedp.CSS(`#detail-cards article[data-request-id="ship"] button[data-option-id="yes"]`)))
	answer := func(id string) string {
		return `document.querySelector('#detail-answers li[data-request-id="` + id + `"]')`
	}
	until(t, tab, "the console's answer: what, who, how and when", answer("ship")+` !== null &&
		`+answer("ship")+`.querySelector(".a-prompt").textContent === "Ship 2.4.0 to stable? → Ship it" &&
		`+answer("ship")+`.querySelector(".a-by").textContent.startsWith("by alice via console at ") &&
		`+answer("ship")+`.querySelector(".a-by time[datetime]") !== null`)
	callAPI(t, ctx, srv, token, http.MethodPost, "/v1/tasks/"+task.TaskID+"/input",
		map[string]any{"responses": []any{map[string]any{"requestId": "notes", "text": "Faster cold starts."}}})
	until(t, tab, "the API's answer and when", answer("notes")+` !== null &&
		`+answer("notes")+`.querySelector(".a-prompt").textContent === "Anything for the release notes? → Faster cold starts." &&
		`+answer("notes")+`.querySelector(".a-by time[datetime]") !== null`)
	until(t, tab, "the task working again", taskShown(task.TaskID, "working"))

	// What the server records shows after a reload.
	record := callAPI(t, ctx, srv, token, http.MethodGet, "/v1/tasks/"+task.TaskID, nil)
	responses, _ := record["inputResponses"].([]any)
	for _, r := range responses {
		if by, _ := r.(map[string]any)["answeredBy"].(string); by != "alice" {
			t.Fatalf("the task records an answer by %q, want alice: %v", by, r)
		}
	}
	do(t, tab, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("task-view")))
	until(t, tab, "who, how and when, from the task's record", answer("ship")+` !== null && `+answer("notes")+` !== null &&
		`+answer("ship")+`.querySelector(".a-by").textContent.startsWith("by alice via console at ") &&
		`+answer("notes")+`.querySelector(".a-by").textContent.startsWith("by alice via API at ")`)

	if _, err := alice.Complete(ctx, task.TaskID, map[string]any{"version": "2.4.0", "published": true,
		"artifacts": []string{"taskhook_2.4.0_linux_amd64.tar.gz", "taskhook_2.4.0_darwin_arm64.tar.gz"}}); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the result", taskShown(task.TaskID, "completed")+` && document.querySelector('#detail-outcome .json-view[data-name="result"]') !== null`)
	until(t, tab, "the lists up to date", `document.querySelector("#inbox article") === null &&
		document.querySelector('#tasks a[data-task-id="`+task.TaskID+`"]').dataset.status === "completed"`)
	screenshot(t, tab, "console-task.png")
	if _, err := chromedp.Call(tab, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the dark colours", `getComputedStyle(document.body).backgroundColor === "rgb(17, 21, 28)"`)
	screenshot(t, tab, "console-dark.png")
	policyKept(t, tab)
}

// watchPolicy makes the pages the tab loads from now on note every
// Content-Security-Policy violation (policyKept checks there was none): a
// style attribute or an inline script in the console would be one.
func watchPolicy(t *testing.T, tab context.Context) {
	t.Helper()
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.policyViolations = []; document.addEventListener("securitypolicyviolation",
			(e) => window.policyViolations.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile + ":" + e.lineNumber));`,
	}); err != nil {
		t.Fatal(err)
	}
}

// policyKept fails the test when the page broke its policy.
func policyKept(t *testing.T, tab context.Context) {
	t.Helper()
	if got := eval[[]string](t, tab, `window.policyViolations`); len(got) > 0 {
		t.Fatalf("the console broke its Content-Security-Policy: %q", got)
	}
}

// TestConsoleShowsFailures: with the store down every panel says what
// failed (the code and message the service gave) and offers a Retry, and
// none says there is nothing; once the store is back a Retry shows it all.
func TestConsoleShowsFailures(t *testing.T) {
	rs := storetest.StartRedisServer(t, storetest.Durable...)
	tab, srv, ctx := startOn(t, store.Config{URL: "redis://" + rs.Addr() + "/0", Prefix: "console:"}, app.Config{})
	alice := srv.Client(t, "alice")
	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "devbox", Label: "Deploy acme/api"})
	if _, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "deploy", Prompt: "Deploy acme/api to staging?"}}); err != nil {
		t.Fatal(err)
	}
	rs.Stop()

	signIn(t, tab, srv, apptest.Token(t, "alice"))
	failed := func(slot string) string {
		return `(() => { const f = document.querySelector("#` + slot + ` .failure");
			return f !== null && f.offsetParent !== null && f.dataset.code === "store_unavailable" &&
				f.innerText.includes("store_unavailable") && f.querySelector("button.retry") !== null; })()`
	}
	until(t, tab, "each list says what failed", failed("inbox-error")+` && `+failed("tasks-error")+` && `+failed("sessions-error"))
	if got := eval[string](t, tab, text("#side")); strings.Contains(got, "No open questions") || strings.Contains(got, "No tasks") ||
		strings.Contains(got, "No sessions") {
		t.Fatalf("with the store down the lists say there is nothing:\n%s", got)
	}

	// The task's own address fails alike, and its Retry shows it once the
	// store is back (nothing retries it but the button).
	openAt(t, tab, srv, "#/tasks/"+task.TaskID)
	until(t, tab, "the task's failure", failed("detail-error")+` && document.getElementById("detail-error").innerText.includes("`+task.TaskID+`")`)
	until(t, tab, "the lists' failures again", failed("inbox-error")+` && `+failed("tasks-error")+` && `+failed("sessions-error"))
	screenshot(t, tab, "console-error.png")
	rs.Start()
	do(t, tab, "Retry", chromedp.Click(chromedp.CSS(`#detail-error button.retry`)))
	until(t, tab, "the task after the retry", taskShown(task.TaskID, "input_required")+` &&
		document.querySelector('#detail-cards article[data-request-id="deploy"]') !== null &&
		document.querySelector("#detail-error .failure") === null`)
	until(t, tab, "the lists back", `document.querySelector('#inbox article[data-task-id="`+task.TaskID+`"]') !== null &&
		document.querySelector('#tasks a[data-task-id="`+task.TaskID+`"]') !== null && document.querySelector("#side .failure") === null`)
}

// TestConsoleTokenRefused: a token the service stops accepting (here, the
// server comes back with another signing secret) returns the console to the
// sign-in, saying why; signing in again returns to the same task.
func TestConsoleTokenRefused(t *testing.T) {
	tab := browser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{Addr: ln.Addr().String(), WakeBlock: 500 * time.Millisecond}
	ln.Close()
	sc := storetest.Standalone(t)
	srv := apptest.Start(t, sc, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, task := apptest.SessionWithTask(t, ctx, srv.Client(t, "alice"), client.CreateTaskInput{Label: "Long job"})
	signIn(t, tab, srv, apptest.Token(t, "alice"))
	openAt(t, tab, srv, "#/tasks/"+task.TaskID)
	until(t, tab, "the task", taskShown(task.TaskID, "working"))

	srv.Stop(t)
	cfg.JWTSecret = "another-secret-0123456789abcdef-0123456789"
	apptest.Start(t, sc, cfg)
	until(t, tab, "the sign-in, saying why", `document.getElementById("signin").offsetParent !== null &&
		document.getElementById("app").offsetParent === null &&
		document.getElementById("signin-error").textContent.includes("401") &&
		sessionStorage.getItem("taskhook.token") === null && location.hash === "#/tasks/`+task.TaskID+`"`)

	fresh, err := authz.IssueDevToken([]byte(cfg.JWTSecret), "alice", nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	do(t, tab, "sign in again",
		chromedp.SetValue(chromedp.ID("token"), fresh),
		chromedp.Click(chromedp.ID("signin-button")),
		chromedp.WaitVisible(chromedp.ID("app")),
	)
	until(t, tab, "the same task", taskShown(task.TaskID, "working"))
}

// set sets the value of the form field id as a person would, and fires
// event (when not "") as the field would.
func set(t *testing.T, tab context.Context, id, value, event string) {
	t.Helper()
	do(t, tab, "set "+id+" to "+value, chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.getElementById(`+jsString(id)+`); f.value = `+jsString(value)+`;
		if (`+jsString(event)+`) f.dispatchEvent(new Event(`+jsString(event)+`)); })()`))
}

// TestConsoleListsAtScale: more tasks than a page, found by search (id,
// label, kind), narrowed by status and kind (by the API) and by when they
// were created (in the page), and loaded page after page.
func TestConsoleListsAtScale(t *testing.T) {
	tab, srv, ctx := startOn(t, storetest.Standalone(t), app.Config{})
	alice := srv.Client(t, "alice")
	ses := apptest.Session(t, ctx, alice)
	create := func(kind, label string) string {
		t.Helper()
		task, err := alice.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: kind, Label: label})
		if err != nil {
			t.Fatal(err)
		}
		return task.TaskID
	}
	var deploys []string
	for i := range 55 {
		if i%10 == 0 {
			deploys = append(deploys, create("deploy", fmt.Sprintf("Deploy r%d", i)))
		} else {
			create("build", fmt.Sprintf("Build #%d", i))
		}
	}
	for _, id := range deploys[:2] {
		if _, err := alice.Complete(ctx, id, map[string]any{"ok": true}); err != nil {
			t.Fatal(err)
		}
	}
	// The browser's clock runs two hours ahead: every task is two hours old.
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `{ const now = Date.now.bind(Date); Date.now = () => now() + 2 * 3600 * 1000; }`}); err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, srv, apptest.Token(t, "alice"))
	rows := `document.querySelectorAll("#tasks a.row").length`
	shown := func(n int) string { return fmt.Sprintf(`%s === %d`, rows, n) }
	until(t, tab, "a page of tasks, and more to load", shown(50)+` && document.getElementById("tasks-more").offsetParent !== null`)
	do(t, tab, "load more", chromedp.Click(chromedp.ID("tasks-more")))
	until(t, tab, "every task, nothing more to load", shown(55)+` && document.getElementById("tasks-more").offsetParent === null`)

	// When: in the page, and it says so.
	when := func(ms string) { set(t, tab, "task-time", ms, "change") }
	when("3600000")
	until(t, tab, "none in the last hour", shown(0)+` && document.getElementById("tasks-note").innerText.startsWith("The time filter looks at") &&
		document.querySelector("#tasks .empty").textContent === "No task matches."`)
	when("86400000")
	until(t, tab, "all in the last day", shown(55))
	when("")

	// Kind and status: by the API.
	set(t, tab, "task-kind", "deploy", "change")
	until(t, tab, "the deploys alone", shown(len(deploys))+` && [...document.querySelectorAll("#tasks .tag")].every(n => n.textContent === "deploy")`)
	set(t, tab, "task-status", "completed", "change")
	until(t, tab, "the two completed deploys", shown(2)+` && document.querySelector('#tasks a[data-task-id="`+deploys[0]+`"]') !== null`)
	set(t, tab, "task-status", "", "")
	set(t, tab, "task-kind", "", "change")
	until(t, tab, "a page of tasks again", shown(50))

	// Search: by label and by kind among what is loaded, by id exactly.
	search := func(q string) { set(t, tab, "search", q, "input") }
	search("build #4")
	until(t, tab, "Build #41 to #49 (#4 is not loaded)", shown(9)+` && document.getElementById("tasks-note").innerText.startsWith("Search looks at")`)
	search("DEPLOY")
	until(t, tab, "the deploys loaded, by kind and label", shown(len(deploys)-1)+` &&
		document.getElementById("tasks-note").innerText.includes("load more to look further")`)
	do(t, tab, "load more", chromedp.Click(chromedp.ID("tasks-more")))
	until(t, tab, "every deploy", shown(len(deploys)))
	search(deploys[3])
	do(t, tab, "Enter", chromedp.SendKeys(chromedp.ID("search"), "\r"))
	until(t, tab, "the task the id names", taskShown(deploys[3], "working"))
}
