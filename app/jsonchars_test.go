package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app/apptest"
)

// A sign-in's authorizationUrl, in every answer that shows it (the ask's
// 202, the task, its events as JSON and as a stream), is written with a
// plain & between its parameters, never encoding/json's \u0026.
func TestAuthorizationURLReadsWithPlainAmpersands(t *testing.T) {
	t.Parallel()
	e := startSignin(t, "path")
	task := e.task(t, "alice")
	bearer := "Bearer " + apptest.Token(t, "exec-owner", "delegate") // the owner may use alice's sign-ins
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(method, path, body, accept string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", bearer)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if accept != "text/event-stream" {
			raw, _ := io.ReadAll(resp.Body)
			return string(raw)
		}
		// The stream does not end: read up to the event wanted.
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "event: authorization.required") {
				sc.Scan()
				b.WriteString(sc.Text() + "\n")
				break
			}
		}
		return b.String()
	}
	answers := []struct{ what, body string }{
		{"the ask", read("POST", "/v1/tasks/"+task.TaskID+"/authorizations", `{"connection":"devbox"}`, "")},
		{"the task", read("GET", "/v1/tasks/"+task.TaskID, "", "")},
		{"the events", read("GET", "/v1/tasks/"+task.TaskID+"/events?kinds=authorization.required", "", "")},
		{"the stream", read("GET", "/v1/tasks/"+task.TaskID+"/events", "", "text/event-stream")},
	}
	authURL := regexp.MustCompile(`"authorizationUrl":"([^"]*)"`)
	for _, a := range answers {
		m := authURL.FindStringSubmatch(a.body)
		if m == nil {
			t.Errorf("%s shows no authorizationUrl: %s", a.what, a.body)
			continue
		}
		if !strings.Contains(m[1], "&state=") || strings.Contains(a.body, `\u0026`) {
			t.Errorf("%s: authorizationUrl %s", a.what, m[1])
		}
	}
}
