package web_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// stepTimeout bounds each step a test takes in the browser.
const stepTimeout = 30 * time.Second

// chromium finds the browser: TASKHOOK_TEST_CHROMIUM, or chromium (or
// Chrome) on the PATH. Without one the browser tests skip, saying how to get
// it, except under CI=true, where they fail: `make test` installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TASKHOOK_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "chromium not found (on the PATH or in TASKHOOK_TEST_CHROMIUM): `make test` installs it " +
		"(apt-get install -y chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why + "; skipping the browser tests")
	return ""
}

// browser starts a headless chromium with a fresh profile, stopped when the
// test ends, and answers a tab of it sized like a laptop screen.
func browser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first run starts the browser, which lives as long as tab: it takes
	// no timeout of its own (the steps below have theirs).
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// do runs steps in the tab within stepTimeout, failing the test with what
// for context.
func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\nthe page then:\n%s", what, err, pageText(tab))
	}
}

// pageText is the text of the page in the tab, for a failure's message.
func pageText(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + "\n" + document.body.innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return text
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v\nthe page then:\n%s", expr, err, pageText(tab))
	}
	return v
}

// until waits, within stepTimeout, for a JavaScript condition to hold in the
// page: a wait on the DOM, never a sleep.
func until(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	do(t, tab, what, chromedp.Poll[chromedp.Void](cond,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
}

// screenshot saves a PNG of the tab as name into TASKHOOK_TEST_SCREENSHOTS,
// when it is set (`make screenshots` sets it to docs/screenshots).
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("TASKHOOK_TEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "<", `\x3c`)
	return `"` + r.Replace(s) + `"`
}

// start opens a tab of the browser and starts a server with cfg for a
// browser test, on the embedded store and with a short WakeBlock; ctx bounds
// the test's own calls to the server, and ends with the test.
func start(t *testing.T, cfg app.Config) (tab context.Context, srv *apptest.Server, ctx context.Context) {
	t.Helper()
	return startOn(t, storetest.Embedded(t), cfg)
}

// startOn is start on the store sc.
func startOn(t *testing.T, sc store.Config, cfg app.Config) (tab context.Context, srv *apptest.Server, ctx context.Context) {
	t.Helper()
	tab = browser(t)
	cfg.WakeBlock = 500 * time.Millisecond
	srv = apptest.Start(t, sc, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return tab, srv, ctx
}

// TestAnswerPageInBrowser opens an answer page from a task's answerUrl,
// clicks an option and sees the done page; the answer is the task's.
func TestAnswerPageInBrowser(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{})
	alice := srv.Client(t, "alice")

	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "release", Label: "Release 2.4.0"})
	asked, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{{
		RequestID: "publish", Prompt: "Publish release 2.4.0 to customers?",
		Options: []client.Choice{
			{ID: "publish", Label: "Publish", Style: "primary", Description: "tag v2.4.0 and announce"},
			{ID: "hold", Label: "Hold", Style: "danger"},
		},
		AllowFreeform: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	answerURL := asked.InputRequests[0].AnswerURL

	do(t, tab, "open the answer page",
		chromedp.Navigate(answerURL),
		chromedp.WaitVisible(chromedp.CSS(`button[name="optionId"][value="publish"]`)),
		chromedp.WaitVisible(chromedp.ID("answer-text")),
	)
	if got := eval[string](t, tab, `getComputedStyle(document.querySelector(".page-card")).borderTopLeftRadius`); got != "10px" {
		t.Fatalf("the stylesheet did not load under the page's policy (card radius %q)", got)
	}
	screenshot(t, tab, "answer-page.png")

	do(t, tab, "click Publish",
		chromedp.Click(chromedp.CSS(`button[name="optionId"][value="publish"]`)),
		chromedp.WaitVisible(chromedp.ID("answer-result")),
	)
	until(t, tab, "the done page", `document.getElementById("answer-result").textContent.includes("Answered.") &&
		document.querySelector(".answer strong").textContent === "Publish" && document.querySelector("form") === null &&
		document.getElementById("answered-how").textContent.startsWith("Answered through an answer link at 20")`)
	if url := eval[string](t, tab, `location.href`); url != answerURL {
		t.Errorf("after the answer the page is %q, want the answer URL", url)
	}
	screenshot(t, tab, "answer-done.png")

	got, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "working" || len(got.InputResponses) != 1 || !answeredAs(got.InputResponses[0],
		client.Answer{RequestID: "publish", OptionID: "publish"}, client.AnsweredByAnswerLink, client.ViaAnswerLink) {
		t.Fatalf("after the click: status %s, answers %+v", got.Status, got.InputResponses)
	}

	// A reload shows the answer again and answers nothing.
	do(t, tab, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("answer-result")))
	again, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Revision != got.Revision {
		t.Errorf("a reload changed the task: revision %d, then %d", got.Revision, again.Revision)
	}
}

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
	tab, srv, ctx := start(t, app.Config{})
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
		chromedp.Click(chromedp.CSS(`#tasks a[data-task-id="`+task.TaskID+`"]`)),
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
	if got.Status != "working" || len(got.InputResponses) != 1 ||
		!answeredAs(got.InputResponses[0], client.Answer{RequestID: "deploy", OptionID: "yes"}, "alice", client.ViaConsole) {
		t.Fatalf("after the click: status %s, answers %+v", got.Status, got.InputResponses)
	}
	// The console shows who answered, through what and when.
	until(t, tab, "the answer shown with who gave it", `(() => {
		const a = document.querySelector('#detail-answers li[data-request-id="deploy"]');
		return a !== null && a.querySelector(".a-prompt").textContent === "Deploy acme/api to staging? → Deploy" &&
			a.querySelector(".a-by").textContent.startsWith("by alice via console at ");
	})()`)
}

// answeredAs reports whether r records answer, given by by through via, at
// some time.
func answeredAs(r client.InputResponse, answer client.Answer, by, via string) bool {
	return r.Answer == answer && r.AnsweredBy == by && r.Via == via && r.SlackUserID == "" && !r.AnsweredAt.IsZero()
}

// TestConsoleSignInRefused: a token the service refuses is not kept.
func TestConsoleSignInRefused(t *testing.T) {
	tab, srv, _ := start(t, app.Config{})
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

// TestNoTokenInLogsOrMetrics runs a whole flow, in the console, on an
// answer page and through the API, then reads the server's logs (at debug
// level) and /metrics: no token used on the way appears in either, not the
// JWT, not an answer token, not a hook token, not a token the server did not
// know.
func TestNoTokenInLogsOrMetrics(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{LogLevel: "debug"})
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
		chromedp.Click(chromedp.CSS(`#tasks a[data-task-id="`+task.TaskID+`"]`), chromedp.RetryInterval(50*time.Millisecond)),
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

// TestHookResponseRunsNothingInBrowser has a page of another origin make the
// browser post to a hook's callback URL with a form that submits itself, as
// a hostile site would, in a tab signed in to the console. The hook's
// static response, its body a script, shows as text in a sandbox: an opaque
// origin that ran nothing and cannot read the console's token.
func TestHookResponseRunsNothingInBrowser(t *testing.T) {
	tab, srv, ctx := start(t, app.Config{})
	alice := srv.Client(t, "alice")
	ses, err := alice.CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		t.Fatal(err)
	}
	const payload = `<script>document.title = "ran"</script><img src=x onerror="document.title='ran'">`
	hook, err := alice.CreateHook(ctx, client.CreateHookInput{SessionID: ses.SessionID,
		Response: &client.HookResponse{Status: 200, Body: payload, ContentType: "text/plain"}})
	if err != nil {
		t.Fatal(err)
	}
	signIn(t, tab, srv, apptest.Token(t, "alice"))

	do(t, tab, "leave for another origin", chromedp.Navigate("about:blank"))
	submit := `(() => {
		const f = document.createElement("form");
		f.method = "POST";
		f.enctype = "text/plain";
		f.action = ` + jsString(hook.URL) + `;
		document.body.appendChild(f);
		f.submit();
	})()`
	stepCtx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(stepCtx, chromedp.Evaluate[chromedp.Void](submit))
	if err != nil {
		t.Fatalf("the form post: %v", err)
	}
	if resp.Status != 200 {
		t.Fatalf("the form post: status %d, want the hook's 200", resp.Status)
	}
	if body := eval[string](t, tab, `document.body.innerText`); body != payload {
		t.Errorf("the answer shows %q, want the body as text", body)
	}
	if origin := eval[string](t, tab, `String(window.origin)`); origin != "null" {
		t.Errorf("the answer runs as origin %q, want an opaque one (null)", origin)
	}
	if got := eval[string](t, tab, `document.title`); got == "ran" {
		t.Error("the hook's script ran")
	}
	token := eval[string](t, tab, `(() => {
		try { return String(sessionStorage.getItem("taskhook.token")); } catch (e) { return "refused: " + e.name; }
	})()`)
	if token != "refused: SecurityError" {
		// Not the value: it is the signed-in token.
		t.Errorf("the answer reads the console's session storage (%d characters)", len(token))
	}
}
