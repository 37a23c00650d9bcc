package api_test

import (
	"net/http"
	"testing"

	"github.com/taskhook/taskhook/api/apitest"
	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
)

// GET / sends a browser to the console (303) and answers any other client
// with the JSON 404 of a path outside the API, both as documented; the
// console is where the redirect says.
func TestRootSendsBrowsersToTheConsole(t *testing.T) {
	t.Parallel()
	srv := apptest.Embedded(t, app.Config{})
	hc := &http.Client{
		Transport:     apitest.Transport(t, nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	browser := get("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if browser.StatusCode != http.StatusSeeOther || browser.Header.Get("Location") != "/console/" {
		t.Fatalf("a browser: %d, Location %q", browser.StatusCode, browser.Header.Get("Location"))
	}
	for _, accept := range []string{"application/json", "*/*", ""} {
		if resp := get(accept); resp.StatusCode != http.StatusNotFound {
			t.Errorf("Accept %q: %d, want the JSON 404", accept, resp.StatusCode)
		}
	}
	console, err := http.Get(srv.URL + browser.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	console.Body.Close()
	if console.StatusCode != http.StatusOK {
		t.Errorf("the console: %d", console.StatusCode)
	}
}
