package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
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

// server starts a server for a browser test on the embedded store.
func server(t *testing.T) *apptest.Server {
	t.Helper()
	return apptest.Embedded(t, app.Config{WakeBlock: 500 * time.Millisecond})
}
