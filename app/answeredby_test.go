package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
)

// recordedAnswer is an answer as the task, its input.resolved event and a
// notification show it, read field by field from the JSON.
type recordedAnswer struct {
	RequestID   string `json:"requestId"`
	OptionID    string `json:"optionId"`
	Action      string `json:"action"`
	AnsweredBy  string `json:"answeredBy"`
	SlackUserID string `json:"slackUserId"`
	AnsweredAt  string `json:"answeredAt"`
	Via         string `json:"via"`
}

// millisUTC is the contract's timestamp: RFC 3339, UTC, milliseconds.
var millisUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// answerChannel answers the request "deploy" of a task whose requester is
// alice with yes, the way one channel does.
type answerChannel struct {
	name        string
	by, slackID string // what the task must record
	via         string
	answer      func(t *testing.T, srv *apptest.Server, taskID, answerURL string)
}

func answerChannels() []answerChannel {
	return []answerChannel{
		{name: "api", by: "alice", via: client.ViaAPI, answer: func(t *testing.T, srv *apptest.Server, taskID, _ string) {
			_, err := srv.Client(t, "alice").Respond(context.Background(), taskID, []client.Answer{{RequestID: "deploy", OptionID: "yes"}})
			if err != nil {
				t.Fatal(err)
			}
		}},
		{name: "console", by: "alice", via: client.ViaConsole, answer: func(t *testing.T, srv *apptest.Server, taskID, _ string) {
			status, body := postInput(t, srv, taskID, `{"responses":[{"requestId":"deploy","optionId":"yes"}]}`, "console")
			if status != http.StatusOK {
				t.Fatalf("the console's answer: %d %s", status, body)
			}
		}},
		{name: "answer link", by: client.AnsweredByAnswerLink, via: client.ViaAnswerLink,
			answer: func(t *testing.T, srv *apptest.Server, _, answerURL string) {
				if _, err := client.New(srv.URL, "").AnswerInput(context.Background(), answerURL, "yes", ""); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "answer page", by: client.AnsweredByAnswerLink, via: client.ViaAnswerLink,
			answer: func(t *testing.T, _ *apptest.Server, _, answerURL string) {
				req, err := http.NewRequest(http.MethodPost, answerURL, strings.NewReader("optionId=yes"))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Accept", "text/html")
				noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := noRedirect.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("the form post: %d", resp.StatusCode)
				}
			}},
		{name: "slack", by: "alice", slackID: "U0ALICE", via: client.ViaSlack,
			answer: func(t *testing.T, srv *apptest.Server, taskID, _ string) {
				block, yes := control(t, rendered(t, srv.Client(t, "alice"), taskID), "answer:deploy:yes")
				r := slackApp{t: t, url: srv.URL}.post(click("U0ALICE", block, yes, ""), time.Now(), slackSecret)
				if r.status != http.StatusOK || !r.reply.ReplaceOriginal {
					t.Fatalf("the click: %+v", r)
				}
			}},
	}
}

// postInput posts body to the task's input route as alice, naming via in
// X-Taskhook-Via when it is not empty.
func postInput(t *testing.T, srv *apptest.Server, taskID, body, via string) (int, string) {
	t.Helper()
	var header []string
	if via != "" {
		header = []string{"X-Taskhook-Via", via}
	}
	status, raw := callAs(t, srv, "alice", http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/input", body, header...)
	return status, string(raw)
}

// callAs sends a request as subject, with a JSON body when body is not
// empty and the header name, value pairs given.
func callAs(t *testing.T, srv *apptest.Server, subject, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apptest.Token(t, subject))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, raw := apptest.Fetch(t, http.DefaultClient, req)
	return resp.StatusCode, raw
}

// Every channel an answer comes through records who gave it, when and
// through what, the same in the task, in its input.resolved event and in
// the notification that delivers that event, on every store.
func TestAnswersRecordWhoWhenAndVia(t *testing.T) {
	cfg := notifyConfig()
	cfg.SlackSigningSecret, cfg.SlackUsers = slackSecret, "U0ALICE=alice"
	apptest.EachBackend(t, cfg, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		agent := srv.ClientActingFor(t, "agent", []string{"alice"})
		ses := apptest.Session(t, ctx, agent)
		for _, ch := range answerChannels() {
			t.Run(ch.name, func(t *testing.T) {
				recv := receivertest.New(t, nil)
				task, err := agent.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "devbox", Requester: "alice",
					Notify: []client.EndpointRequest{{URL: recv.URL, Kinds: []string{client.EventInputResolved}}}})
				if err != nil {
					t.Fatal(err)
				}
				asked, err := agent.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "deploy", Prompt: "Deploy?",
					Display: client.DisplayConfirmation}})
				if err != nil {
					t.Fatal(err)
				}
				before := time.Now().Truncate(time.Millisecond)
				ch.answer(t, srv, task.TaskID, asked.InputRequests[0].AnswerURL)
				after := time.Now()

				check := func(where string, raw json.RawMessage) {
					t.Helper()
					var got []recordedAnswer
					if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 {
						t.Fatalf("%s: %s (%v)", where, raw, err)
					}
					a := got[0]
					at, err := time.Parse(time.RFC3339Nano, a.AnsweredAt)
					if a.RequestID != "deploy" || a.OptionID != "yes" || a.AnsweredBy != ch.by || a.SlackUserID != ch.slackID ||
						a.Via != ch.via || !millisUTC.MatchString(a.AnsweredAt) || err != nil || at.Before(before) || at.After(after) {
						t.Errorf("%s: %s, want answered by %q (Slack user %q) via %q between %s and %s",
							where, raw, ch.by, ch.slackID, ch.via, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
					}
				}

				var stored struct {
					InputResponses json.RawMessage `json:"inputResponses"`
				}
				if status, raw := callAs(t, srv, "alice", http.MethodGet, "/v1/tasks/"+task.TaskID, ""); status != http.StatusOK ||
					json.Unmarshal(raw, &stored) != nil {
					t.Fatalf("GET the task: %d %s", status, raw)
				}
				check("the task", stored.InputResponses)

				evs, err := agent.TaskEvents(ctx, task.TaskID, client.EventsParams{}, client.WithKinds(client.EventInputResolved))
				if err != nil || len(evs.Events) != 1 {
					t.Fatalf("input.resolved: %+v %v", evs, err)
				}
				var data struct {
					Responses json.RawMessage `json:"responses"`
				}
				if err := json.Unmarshal(evs.Events[0].Data, &data); err != nil {
					t.Fatal(err)
				}
				check("input.resolved", data.Responses)

				waitDeliveries(t, recv, 1)
				d := recv.Got()[0]
				ev, err := client.VerifyNotification(task.Notify[0].Secret, d.Header, d.Body)
				if err != nil || ev.Type != client.EventInputResolved {
					t.Fatalf("the notification: %+v %v", ev, err)
				}
				if err := json.Unmarshal(ev.Data, &data); err != nil {
					t.Fatal(err)
				}
				check("the notification", data.Responses)
			})
		}
	})
}

// No client says who answered, when or through what: the fields are refused
// in the body, a face other than api or console in the header; a decline is
// recorded as one; and the same answer again, from another channel, is a
// no-op that keeps the first record.
func TestAnswerersComeFromTheServer(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{})
	ctx := context.Background()
	agent, alice := srv.ClientActingFor(t, "agent", []string{"alice"}), srv.Client(t, "alice")
	_, task := apptest.SessionWithTask(t, ctx, agent, client.CreateTaskInput{Requester: "alice"})
	if _, err := agent.RequireInput(ctx, task.TaskID, []client.InputRequest{
		{RequestID: "deploy", Prompt: "Deploy?", Display: client.DisplayConfirmation},
		{RequestID: "notes", Prompt: "Notes?", Display: client.DisplayText},
	}); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"answeredBy":"root"`, `"answeredAt":"2020-01-01T00:00:00.000Z"`, `"via":"slack"`, `"slackUserId":"U1"`} {
		body := `{"responses":[{"requestId":"deploy","optionId":"yes",` + field + `}]}`
		if status, raw := postInput(t, srv, task.TaskID, body, ""); status != http.StatusBadRequest || !strings.Contains(raw, "invalid_request") {
			t.Errorf("a body with %s: %d %s", field, status, raw)
		}
	}
	for _, via := range []string{"slack", "answer_link", "mcp", "Console"} {
		if status, raw := postInput(t, srv, task.TaskID, `{"responses":[{"requestId":"deploy","optionId":"yes"}]}`, via); status != http.StatusBadRequest ||
			!strings.Contains(raw, "X-Taskhook-Via") {
			t.Errorf("X-Taskhook-Via: %s: %d %s", via, status, raw)
		}
	}
	if got, _ := alice.GetTask(ctx, task.TaskID); len(got.InputResponses) != 0 {
		t.Fatalf("a refused answer was recorded: %+v", got.InputResponses)
	}

	first, err := alice.Respond(ctx, task.TaskID, []client.Answer{{RequestID: "notes", Action: client.ActionDecline}})
	if err != nil {
		t.Fatal(err)
	}
	if r := first.InputResponses; len(r) != 1 || r[0].Action != client.ActionDecline || r[0].AnsweredBy != "alice" || r[0].Via != client.ViaAPI ||
		first.Status != client.StatusInputRequired {
		t.Fatalf("the decline: %+v", first)
	}
	answers := srv.App.Metrics.Answers
	if n := testutil.ToFloat64(answers.WithLabelValues(client.ViaAPI, client.ActionDecline)); n != 1 {
		t.Errorf("taskhook_answers_total{via=api,action=decline} = %v, want 1", n)
	}
	status, raw := postInput(t, srv, task.TaskID, `{"responses":[{"requestId":"notes","action":"decline"}]}`, "console")
	var again client.Task
	if status != http.StatusOK || json.Unmarshal([]byte(raw), &again) != nil || again.Revision != first.Revision ||
		again.InputResponses[0] != first.InputResponses[0] {
		t.Fatalf("the same decline from the console: %d %s, want the task unchanged", status, raw)
	}
	if n := testutil.ToFloat64(answers.WithLabelValues(client.ViaConsole, client.ActionDecline)); n != 0 {
		t.Errorf("a repeated answer was counted: taskhook_answers_total{via=console,action=decline} = %v", n)
	}
}
