package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// fakeSlack is a Slack Web API on loopback: chat.postMessage and
// chat.update, checking the bot token, answering 429 with Retry-After when
// told to.
type fakeSlack struct {
	*httptest.Server
	mu        sync.Mutex
	calls     []slackCall
	throttle  int // answer this many next calls 429
	nextTS    int
	messages  map[string]json.RawMessage // ts → blocks
	badTokens int
}

type slackCall struct {
	Method  string
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Text    string `json:"text"`
	Blocks  json.RawMessage
	Limited bool
}

const slackToken = "xoxb-test-token"

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{messages: map[string]json.RawMessage{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+slackToken {
			f.badTokens++
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		var c slackCall
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &c)
		var raw struct {
			Blocks json.RawMessage `json:"blocks"`
		}
		_ = json.Unmarshal(body, &raw)
		c.Blocks, c.Method = raw.Blocks, r.URL.Path
		if f.throttle > 0 {
			f.throttle--
			c.Limited = true
			f.calls = append(f.calls, c)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		f.calls = append(f.calls, c)
		switch r.URL.Path {
		case "/api/chat.postMessage":
			f.nextTS++
			ts := "1700000000." + strconv.Itoa(f.nextTS)
			f.messages[ts] = c.Blocks
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C0SLACK", "ts": ts})
		case "/api/chat.update":
			if _, ok := f.messages[c.TS]; !ok || c.Channel != "C0SLACK" {
				_, _ = io.WriteString(w, `{"ok":false,"error":"message_not_found"}`)
				return
			}
			f.messages[c.TS] = c.Blocks
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": c.Channel, "ts": c.TS})
		default:
			_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// message is the blocks the message with ts shows now.
func (f *fakeSlack) message(ts string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.messages[ts])
}

func (f *fakeSlack) snapshot() []slackCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]slackCall(nil), f.calls...)
}

// A question for a Slack endpoint is posted once (after a 429 that asked to
// wait), and its answer and the task's end update the same message.
func TestSlackEndpointPostsTheQuestionAndUpdatesIt(t *testing.T) {
	slack := newFakeSlack(t)
	slack.throttle = 1
	srv := apptest.Standalone(t, app.Config{
		SlackBotToken: slackToken, SlackAPIURL: slack.URL + "/api/", NotifyRetryBase: 1, SlackChannels: "C0SLACK=slack-owner",
	})
	ctx := context.Background()
	cl := client.New(srv.URL, apptest.Token(t, "slack-owner"))
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{Notify: []client.EndpointRequest{{Slack: &client.SlackTarget{Channel: "C0SLACK"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if ep := ses.Notify[0]; ep.Slack == nil || ep.Secret != "" || ep.URL != "" {
		t.Fatalf("the Slack endpoint: %+v", ep)
	}
	task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "Deploy"})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := cl.RequireInput(ctx, task.TaskID, []client.InputRequest{{Prompt: "Ship it?", Display: client.DisplayConfirmation}})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, "the question in Slack", func() bool {
		calls := slack.snapshot()
		return len(calls) == 2 && calls[1].Method == "/api/chat.postMessage"
	})
	calls := slack.snapshot()
	if !calls[0].Limited || calls[1].Channel != "C0SLACK" || len(calls[1].Blocks) == 0 || calls[1].Text == "" {
		t.Fatalf("the posts: %+v", calls)
	}
	req := asked.InputRequests[0]
	if _, err := cl.Respond(ctx, task.TaskID, []client.Answer{{RequestID: req.RequestID, OptionID: req.Options[0].ID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Complete(ctx, task.TaskID, nil); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, "the message to show the end", func() bool {
		return strings.Contains(slack.message("1700000000.1"), "Completed")
	})
	if msg := slack.message("1700000000.1"); !strings.Contains(msg, "Answered by slack-owner via API at \\u003c!date^") {
		t.Fatalf("the message does not say who answered, how and when: %s", msg)
	}
	posts := 0
	for _, c := range slack.snapshot() {
		if c.Method == "/api/chat.postMessage" && !c.Limited {
			posts++
		}
		if c.Method == "/api/chat.update" && c.TS != "1700000000.1" {
			t.Fatalf("an update of another message: %+v", c)
		}
	}
	if posts != 1 || slack.badTokens != 0 {
		t.Fatalf("%d posts (want 1), %d calls with a bad token", posts, slack.badTokens)
	}
}

// A Slack endpoint that takes the sign-in events posts a task's sign-in
// with a Sign in button whose link works (the attempt put in, as every
// reader gets it) while Redis still holds only the placeholder, and
// updates the message once the person has signed in.
func TestSlackEndpointPostsTheSignin(t *testing.T) {
	slack := newFakeSlack(t)
	e := startSigninWith(t, storetest.Standalone(t), "path", app.Config{
		SlackBotToken: slackToken, SlackAPIURL: slack.URL + "/api/", NotifyRetryBase: 1, SlackUsers: "U0ALICE=alice",
	})
	ctx := context.Background()
	ses, err := e.owner.CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		t.Fatal(err)
	}
	task, err := e.owner.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "Open a pull request",
		Requester: "alice", Notify: []client.EndpointRequest{{Slack: &client.SlackTarget{Channel: "U0ALICE"},
			Kinds: []string{client.EventAuthorizationRequired, client.EventAuthorizationCompleted}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, pending := e.ask(t, task.TaskID)
	storetest.WaitFor(t, "the sign-in in Slack", func() bool { return len(slack.snapshot()) == 1 })
	post := slack.snapshot()[0]
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			URL      string `json:"url"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(post.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	var link string
	for _, b := range blocks {
		for _, el := range b.Elements {
			if el.ActionID == "signin:"+pending.RequestID {
				link = el.URL
			}
		}
	}
	if post.Method != "/api/chat.postMessage" || post.Channel != "U0ALICE" || link != pending.AuthorizationURL {
		t.Fatalf("the post: %s %s, Sign in links to %q, want %q", post.Method, post.Channel, link, pending.AuthorizationURL)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	scanClear(t, e.srv, u.Query().Get("state"))

	if status, loc := e.visit(t, e.prov.Approve(t, link)); status != http.StatusSeeOther || !strings.Contains(loc, "outcome=authorized") {
		t.Fatalf("the link in Slack: %d %q", status, loc)
	}
	storetest.WaitFor(t, "the message to show the sign-in", func() bool {
		return strings.Contains(slack.message("1700000000.1"), "alice signed in to devbox")
	})
}
