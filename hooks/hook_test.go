package hooks

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/store"
)

func ptr[T any](v T) *T { return &v }

func TestCreateInputValidate(t *testing.T) {
	for name, c := range map[string]struct {
		in    CreateInput
		field string // "" for valid
	}{
		"session":              {CreateInput{SessionID: "ses_x"}, ""},
		"task":                 {CreateInput{TaskID: "task_x"}, ""},
		"neither":              {CreateInput{}, "taskId"},
		"long label":           {CreateInput{SessionID: "s", Label: strings.Repeat("l", 201)}, "label"},
		"ttl too short":        {CreateInput{SessionID: "s", TTLMs: ptr(int64(999))}, "ttlMs"},
		"ttl shortest":         {CreateInput{SessionID: "s", TTLMs: ptr(int64(1000))}, ""},
		"verify no scheme":     {CreateInput{SessionID: "s", Verify: &Verify{Secret: "x"}}, "verify.scheme"},
		"verify ok":            {CreateInput{SessionID: "s", Verify: &Verify{Scheme: SchemeGitHub, Secret: "x"}}, ""},
		"dedupe header":        {CreateInput{SessionID: "s", DedupeHeader: "X-Event-Id"}, ""},
		"bad dedupe header":    {CreateInput{SessionID: "s", DedupeHeader: "X Event"}, "dedupeHeader"},
		"response default":     {CreateInput{SessionID: "s", Response: &Response{Body: "ok"}}, ""},
		"response 500":         {CreateInput{SessionID: "s", Response: &Response{Status: 500}}, "response.status"},
		"response 302":         {CreateInput{SessionID: "s", Response: &Response{Status: 302}}, "response.status"},
		"response 204 body":    {CreateInput{SessionID: "s", Response: &Response{Status: 204, Body: "x"}}, "response.body"},
		"response big body":    {CreateInput{SessionID: "s", Response: &Response{Body: strings.Repeat("b", 4097)}}, "response.body"},
		"response bad type":    {CreateInput{SessionID: "s", Response: &Response{ContentType: "text"}}, "response.contentType"},
		"response header smug": {CreateInput{SessionID: "s", Response: &Response{ContentType: "text/plain\r\nX-A: b"}}, "response.contentType"},
	} {
		err := validateCreate(&c.in)
		var verr *problem.ValidationError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.field != "" && (!errors.As(err, &verr) || verr.Field != c.field):
			t.Errorf("%s: %v, want a problem with %s", name, err, c.field)
		}
	}
	in := CreateInput{SessionID: "s", Response: &Response{Body: "ok"}}
	if err := validateCreate(&in); err != nil || in.Response.Status != 200 || in.Response.ContentType != "text/plain; charset=utf-8" {
		t.Errorf("response defaults: %+v %v", in.Response, err)
	}
}

// A response may only be of a type a browser never runs; the type is kept
// in the form it was checked in.
func TestResponseContentTypes(t *testing.T) {
	for _, ct := range []string{
		"text/html", "Text/HTML; charset=utf-8", "TEXT/HTML", "text/html;charset=utf-8",
		"application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml", "application/rss+xml",
		"text/xsl", "application/xslt+xml", "application/mathml+xml",
		"text/javascript", "application/javascript", "application/x-javascript", "application/ecmascript",
		"text/ecmascript", "application/json+javascript", "text/vtt", "text/css", "application/pdf",
		"multipart/x-mixed-replace; boundary=x", "multipart/form-data; boundary=x", "message/rfc822",
		"application/octet-stream", "application/x-www-form-urlencoded", "image/png", "text/csv",
		"application/+json", "application/json/x", "text/plain/html",
		"text/plain; charset=utf-7", "application/json; charset=iso-8859-1", "text/plain; charset=utf-8; x=y",
		"application/json; boundary=x", "text/plain, text/html", "text/plain\x00", "no type",
	} {
		in := CreateInput{SessionID: "s", Response: &Response{ContentType: ct}}
		var verr *problem.ValidationError
		if err := validateCreate(&in); !errors.As(err, &verr) || verr.Field != "response.contentType" {
			t.Errorf("%q: %v, want a problem with response.contentType", ct, err)
		}
	}
	for ct, kept := range map[string]string{
		"":                                         "text/plain; charset=utf-8",
		"text/plain":                               "text/plain",
		"TEXT/Plain; Charset=\"UTF-8\"":            "text/plain; charset=utf-8",
		"application/json":                         "application/json",
		"Application/JSON;charset=utf-8":           "application/json; charset=utf-8",
		"application/problem+json":                 "application/problem+json",
		"application/vnd.github.v3+json":           "application/vnd.github.v3+json",
		"application/scim+json; charset=utf-8":     "application/scim+json; charset=utf-8",
		"text/plain;":                              "text/plain",
		"text/plain; Charset=utf-8; charset=utf-8": "text/plain; charset=utf-8",
	} {
		in := CreateInput{SessionID: "s", Response: &Response{ContentType: ct}}
		if err := validateCreate(&in); err != nil || in.Response.ContentType != kept {
			t.Errorf("%q: %q %v, want %q", ct, in.Response.ContentType, err, kept)
		}
	}
}

// A response stored before active types were refused is sent as plain text;
// one of an allowed type is sent as it is.
func TestServableResponse(t *testing.T) {
	if servable(nil) != nil {
		t.Error("no response made one")
	}
	old := &Response{Status: 200, Body: "<script>alert(1)</script>", ContentType: "text/html"}
	got := servable(old)
	if got.ContentType != defaultResponse || got.Body != old.Body || got.Status != 200 || old.ContentType != "text/html" {
		t.Errorf("stored text/html served as %+v (stored one now %+v)", got, old)
	}
	ok := &Response{Status: 201, Body: "{}", ContentType: "application/json"}
	if servable(ok) != ok {
		t.Errorf("an allowed response was changed")
	}
}

func TestHookViewHasNoSecret(t *testing.T) {
	h := Hook{HookID: "hook_x", Verify: viewOf(&Verify{Scheme: SchemeHMACSHA256, Secret: "s3cr3t", Header: "X-Sig"})}
	b, err := json.Marshal(Created{Hook: h, Token: "whk_t", URL: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "secret") {
		t.Fatalf("view: %s", b)
	}
	if !strings.Contains(string(b), `"verify":{"scheme":"hmac-sha256","header":"X-Sig"}`) || !strings.Contains(string(b), `"token":"whk_t"`) {
		t.Fatalf("view: %s", b)
	}
}

func TestKeptHeaders(t *testing.T) {
	h := http.Header{}
	for k, v := range map[string]string{
		"Authorization": "Bearer t", "Cookie": "c", "X-Hub-Signature-256": "sha256=ab", "Stripe-Signature": "t=1",
		"Webhook-Signature": "v1,x", "X-Slack-Signature": "v0=x", "X-Gitlab-Token": "tok", "X-My-Sig": "mac",
		"X-GitHub-Event": "push", "Webhook-Id": "msg_1", "X-Job-Event": "job-1", "X-Random": "r",
		"Content-Type": "application/json", "User-Agent": strings.Repeat("u", 2000),
	} {
		h.Set(k, v)
	}
	got := keptHeaders(h, ingestConfig{
		DedupeHeader: "x-job-event", Verify: &Verify{Scheme: SchemeHMACSHA256, Secret: "s", Header: "x-my-sig"},
	})
	for _, k := range []string{"authorization", "cookie", "x-hub-signature-256", "stripe-signature", "webhook-signature",
		"x-slack-signature", "x-gitlab-token", "x-my-sig", "x-random"} {
		if _, ok := got[k]; ok {
			t.Errorf("kept %s", k)
		}
	}
	for k, v := range map[string]string{"x-github-event": "push", "webhook-id": "msg_1", "x-job-event": "job-1",
		"content-type": "application/json"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got["user-agent"]) != 1024 {
		t.Errorf("user-agent kept at %d bytes", len(got["user-agent"]))
	}
	// A dedupe header that names a secret header is still not kept.
	h.Set("Authorization", "Bearer t")
	if got := keptHeaders(h, ingestConfig{DedupeHeader: "Authorization"}); got["authorization"] != "" {
		t.Error("kept Authorization as the dedupe header")
	}
}

// The hook.received event, completed as the script completes it (each
// marker in its one place), is what json.Marshal gives for the event,
// whatever the strings hold.
func TestReceivedEvent(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 10_000_000, time.UTC)
	for _, c := range []struct {
		cfg                 ingestConfig
		method, contentType string
	}{
		{ingestConfig{HookID: "hook_1", SessionID: "ses_1", TaskID: "task_1"}, "POST", `text/plain; a="b"`},
		{ingestConfig{HookID: "hook_2", SessionID: "ses_2"}, "PUT", "application/json; charset=utf-8"},
		{ingestConfig{HookID: "hook_3", SessionID: "ses_3", TaskID: "task_3"}, "POST", "text/html; q=<&>\\ é\t"},
	} {
		ev := string(receivedEvent(c.cfg, c.method, c.contentType, at))
		if strings.Count(ev, store.FillQueueID) != 1 || strings.Count(ev, store.FillSeq) != 1 {
			t.Errorf("event %q: want one place for the queue id and one for the seq", ev)
		}
		full := strings.Replace(strings.Replace(ev, store.FillQueueID, "1-0", 1), store.FillSeq, "3", 1)
		data, _ := json.Marshal(struct {
			HookID      string `json:"hookId"`
			Method      string `json:"method"`
			ContentType string `json:"contentType"`
			EventID     string `json:"eventId"`
			Seq         int64  `json:"seq"`
		}{c.cfg.HookID, c.method, c.contentType, "1-0", 3})
		want, _ := json.Marshal(events.Event{
			Type: "hook.received", At: events.At(at), SessionID: c.cfg.SessionID, TaskID: c.cfg.TaskID, Data: data,
		})
		if full != string(want) {
			t.Errorf("event\n%s\nwant\n%s", full, want)
		}
	}
}

func TestRateInterval(t *testing.T) {
	for rate, want := range map[float64]time.Duration{
		50: 20 * time.Millisecond, 1: time.Second, 0.1: 10 * time.Second, 1000: time.Millisecond, 3: 333 * time.Millisecond,
	} {
		if got := (Config{RateLimit: rate}).rateInterval(); got != want {
			t.Errorf("rate %v: %v, want %v", rate, got, want)
		}
	}
	if err := (Config{RateLimit: 5000}).Validate(); err == nil {
		t.Error("a rate above 1000/s is accepted")
	}
}

func TestReadOptionsDefaults(t *testing.T) {
	o := ReadOptions{}
	if err := o.normalize(); err != nil {
		t.Fatal(err)
	}
	if o.Group != "default" || o.Consumer != "default" || o.Count != 10 || o.Visibility != 30*time.Second || o.Wait != 0 {
		t.Fatalf("defaults: %+v", o)
	}
	o = ReadOptions{Wait: time.Hour}
	if err := o.normalize(); err != nil || o.Wait != MaxWait {
		t.Fatalf("wait cap: %+v %v", o, err)
	}
}
