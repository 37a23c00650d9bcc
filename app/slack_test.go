package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/channels/slack/slacktest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/slacksig"
)

const slackSecret = "slack-signing-secret-for-tests"

// slackReply is an interaction's answer as the test reads it.
type slackReply struct {
	status int
	raw    []byte
	reply  slack.Reply
	code   string // of an error answer
}

// slackApp posts interactions to a server as Slack does: a form with the
// JSON in "payload", signed the documented way.
type slackApp struct {
	t   *testing.T
	url string
}

func (s slackApp) post(body []byte, timestamp time.Time, secret string) slackReply {
	s.t.Helper()
	ts := strconv.FormatInt(timestamp.Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/channels/slack/interactions", strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(slacksig.HeaderTimestamp, ts)
	req.Header.Set(slacksig.HeaderSignature, slacksig.Sign([]byte(secret), ts, body))
	resp, raw := apptest.Fetch(s.t, http.DefaultClient, req)
	out := slackReply{status: resp.StatusCode, raw: raw}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		out.code = e.Error.Code
		return out
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.reply); err != nil {
			s.t.Fatalf("reply %s: %v", raw, err)
		}
	}
	return out
}

// click is the block_actions payload Slack sends when user acts on el, an
// element of a message the server rendered (block is the element's block).
func click(user string, block slack.Block, el slack.Element, typed string) []byte {
	act := map[string]any{"type": el.Type, "action_id": el.ActionID, "block_id": block.BlockID, "action_ts": "1700000000.1"}
	if el.Type == slack.ElementButton {
		act["value"], act["text"] = el.Value, el.Text
	} else {
		act["value"] = typed
	}
	p, _ := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user, "username": "someone", "team_id": "T1"},
		"api_app_id": "A1", "container": map[string]any{"type": "message", "message_ts": "1700000000.0001"},
		"response_url": "https://hooks.slack.com/actions/T1/1/x", "actions": []any{act},
	})
	return []byte("payload=" + url.QueryEscape(string(p)))
}

// rendered is the task as the server renders it for Slack.
func rendered(t *testing.T, cl *client.Client, taskID string) slack.Message {
	t.Helper()
	raw, err := cl.Render(context.Background(), taskID, client.RenderFormatSlack)
	if err != nil {
		t.Fatal(err)
	}
	var m slack.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// control finds the element of m whose action id is actionID.
func control(t *testing.T, m slack.Message, actionID string) (slack.Block, slack.Element) {
	t.Helper()
	for _, b := range m.Blocks {
		if b.Element != nil && b.Element.ActionID == actionID {
			return b, *b.Element
		}
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return b, e
			}
		}
	}
	t.Fatalf("no control %s in %+v", actionID, m)
	return slack.Block{}, slack.Element{}
}

func hasText(blocks []slack.Block, text string) bool {
	return slices.ContainsFunc(blocks, func(b slack.Block) bool { return b.Text != nil && strings.Contains(b.Text.Text, text) })
}

// TestSlackInteractions drives the Slack route as Slack would, against a
// real server on Redis: only the mapped requester's signed click answers;
// everyone else is refused, and a bad or stale signature stores nothing.
func TestSlackInteractions(t *testing.T) {
	srv := apptest.Standalone(t, app.Config{
		SlackSigningSecret: slackSecret, SlackUsers: "U0ALICE=alice,U0BOB=bob,U0AGENT=agent",
	})
	ctx := context.Background()
	agent, alice := srv.ClientActingFor(t, "agent", []string{"alice"}), srv.Client(t, "alice")
	ses := apptest.Session(t, ctx, agent)
	task, err := agent.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "devbox", Requester: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := agent.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "deploy", Prompt: "Deploy <to> staging?", Display: "confirmation"}})
	if err != nil {
		t.Fatal(err)
	}
	sl := slackApp{t: t, url: srv.URL}
	msg := rendered(t, alice, task.TaskID) // the requester may render it too
	if !hasText(msg.Blocks, "Deploy &lt;to&gt; staging?") || msg.Text != "devbox: Deploy &lt;to&gt; staging?" {
		t.Fatalf("rendered: %+v", msg)
	}
	yesBlock, yes := control(t, msg, "answer:deploy:yes")
	yesBy := func(user string) []byte { return click(user, yesBlock, yes, "") }
	unchanged := func(what string) {
		t.Helper()
		now, err := agent.GetTask(ctx, task.TaskID)
		if err != nil || now.Revision != asked.Revision || now.Status != client.StatusInputRequired || len(now.InputResponses) != 0 {
			t.Fatalf("%s changed the task: %+v %v", what, now, err)
		}
	}

	if r := sl.post(yesBy("U0ALICE"), time.Now(), "another-secret"); r.status != 401 || r.code != "signature_invalid" {
		t.Fatalf("a bad signature: %+v", r)
	}
	unchanged("a bad signature")
	if r := sl.post(yesBy("U0ALICE"), time.Now().Add(-6*time.Minute), slackSecret); r.status != 401 || r.code != "signature_invalid" {
		t.Fatalf("a stale timestamp: %+v", r)
	}
	unchanged("a stale timestamp")
	for user, want := range map[string]string{
		"U0NOBODY": slack.RefusedUnmapped,     // no principal
		"U0BOB":    slack.RefusedNotRequester, // somebody else
		"U0AGENT":  slack.RefusedNotRequester, // the owner is not the requester either
	} {
		r := sl.post(yesBy(user), time.Now(), slackSecret)
		if r.status != 200 || r.reply.ResponseType != "ephemeral" || r.reply.ReplaceOriginal || r.reply.Text != want {
			t.Fatalf("%s: %+v", user, r)
		}
		unchanged(user)
	}

	r := sl.post(yesBy("U0ALICE"), time.Now(), slackSecret)
	const bySlack = "Answered by <@U0ALICE> (alice) via Slack at <!date^"
	if r.status != 200 || !r.reply.ReplaceOriginal || r.reply.ResponseType != "" || !hasText(r.reply.Blocks, bySlack) ||
		!strings.HasPrefix(r.reply.Text, "devbox: "+bySlack) || !strings.HasSuffix(r.reply.Text, ": Yes") {
		t.Fatalf("the requester's click: %+v", r)
	}
	done, err := agent.GetTask(ctx, task.TaskID)
	if err != nil || done.Status != client.StatusWorking || done.Revision != asked.Revision+1 ||
		len(done.InputResponses) != 1 || done.InputResponses[0].RequestID != "deploy" || done.InputResponses[0].OptionID != "yes" {
		t.Fatalf("after the click: %+v %v", done, err)
	}
	if r := sl.post(yesBy("U0ALICE"), time.Now(), slackSecret); r.reply.Text != slack.RefusedClosed || r.reply.ReplaceOriginal {
		t.Fatalf("a second click: %+v", r)
	}
	if again, _ := agent.GetTask(ctx, task.TaskID); again.Revision != done.Revision {
		t.Fatalf("a second click changed the task: revision %d", again.Revision)
	}

	// Typed text, through the input of a free-text request.
	if _, err := agent.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "why", Prompt: "Why?", Display: "text"}}); err != nil {
		t.Fatal(err)
	}
	block, input := control(t, rendered(t, agent, task.TaskID), "text:why")
	if !block.DispatchAction || input.Type != slack.ElementTextInput {
		t.Fatalf("the input: %+v %+v", block, input)
	}
	r = sl.post(click("U0ALICE", block, input, "the cache was cold"), time.Now(), slackSecret)
	if !r.reply.ReplaceOriginal || !hasText(r.reply.Blocks, "UTC>: the cache was cold") {
		t.Fatalf("typed answer: %+v", r)
	}
	typed, _ := agent.GetTask(ctx, task.TaskID)
	if typed.Status != client.StatusWorking || len(typed.InputResponses) != 2 || typed.InputResponses[1].Text != "the cache was cold" {
		t.Fatalf("after the typed answer: %+v", typed)
	}
	if strings.Contains(srv.Logs.String(), "the cache was cold") || strings.Contains(srv.Logs.String(), "U0ALICE") {
		t.Fatal("a payload reached the logs")
	}

	// Slack checks the URL with a challenge, signed like the rest.
	r = sl.post([]byte(`{"type":"url_verification","token":"x","challenge":"ch4llenge"}`), time.Now(), slackSecret)
	if r.status != 200 || string(r.raw) != `{"challenge":"ch4llenge"}` {
		t.Fatalf("url_verification: %d %s", r.status, r.raw)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{`taskhook_slack_interactions_total{outcome="answered"} 2`,
		`taskhook_slack_interactions_total{outcome="not_requester"} 2`, `taskhook_slack_interactions_total{outcome="signature_invalid"} 2`} {
		if !strings.Contains(string(metrics), line) {
			t.Errorf("metrics lack %s", line)
		}
	}
	if info, err := agent.Info(ctx); err != nil || !slices.Contains(info.Capabilities, "slack") {
		t.Fatalf("info: %+v %v", info, err)
	}
}

// TestSlackRender: the owner and the requester may render a task, anybody
// else gets the 404 of a missing task, and only the slack format exists.
func TestSlackRender(t *testing.T) {
	srv := apptest.Standalone(t, app.Config{})
	ctx := context.Background()
	agent := srv.ClientActingFor(t, "agent", []string{"alice"})
	ses := apptest.Session(t, ctx, agent)
	task, err := agent.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "devbox", Requester: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if m := rendered(t, agent, task.TaskID); len(m.Blocks) != 2 || m.Text != "devbox: Working" {
		t.Fatalf("a working task: %+v", m)
	}
	if _, err := srv.Client(t, "mallory").Render(ctx, task.TaskID, client.RenderFormatSlack); !client.IsCode(err, client.CodeNotFound) {
		t.Fatalf("another principal: %v", err)
	}
	if _, err := agent.Render(ctx, task.TaskID, "teams"); !client.IsCode(err, client.CodeInvalidRequest) ||
		!strings.Contains(err.Error(), "format") {
		t.Fatalf("another format: %v", err)
	}
	if info, err := agent.Info(ctx); err != nil || slices.Contains(info.Capabilities, "slack") || !slices.Contains(info.Capabilities, "slack-render") {
		t.Fatalf("info without a signing secret: %+v %v", info, err)
	}
	// Without a signing secret the interactions route does not exist.
	resp, err := http.Post(srv.URL+"/v1/channels/slack/interactions", "application/x-www-form-urlencoded", strings.NewReader("payload=%7B%7D"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the route without a secret: %d", resp.StatusCode)
	}
}

// longRequests are n questions as an agent might ask them: a paragraph of
// context and five options with long labels each.
func longRequests(n int) []client.InputRequest {
	reqs := make([]client.InputRequest, n)
	for i := range reqs {
		r := client.InputRequest{RequestID: fmt.Sprintf("migration-step-%02d", i), Prompt: strings.Repeat(
			"The migration of the billing service rewrites 4,812 rows of the invoices table; the dry run "+
				"(https://ci.example.com/runs/99812) found 3 conflicts with open refunds. ", 12)}
		for j := range 5 {
			r.Options = append(r.Options, client.Choice{ID: fmt.Sprintf("choice-%d", j),
				Label: fmt.Sprintf("Go ahead with plan %d, then page the on-call team of the billing service", j)})
		}
		reqs[i] = r
	}
	return reqs
}

// clickAnswers posts the click Slack sends when alice acts on el (of
// block) in msg, written the dearest way and more than atLeast bytes long,
// and returns the task as the agent reads it once the click was taken.
func clickAnswers(t *testing.T, srv *apptest.Server, agent *client.Client, taskID string, msg slack.Message,
	block slack.Block, el slack.Element, typed string, atLeast int) *client.Task {
	t.Helper()
	body := slacktest.Form(slacktest.Click("U0ALICE", msg, block, el, typed), slacktest.Escaped)
	t.Logf("the click is %d bytes (the cap %d)", len(body), slack.MaxInteractionBytes)
	if len(body) <= atLeast {
		t.Fatalf("the click is only %d bytes", len(body))
	}
	r := slackApp{t: t, url: srv.URL}.post(body, time.Now(), slackSecret)
	if r.status != 200 || !r.reply.ReplaceOriginal {
		t.Fatalf("the click: %d %.300s", r.status, r.raw)
	}
	got, err := agent.GetTask(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSlackClickOnAMessageOfTwelveRequests: Slack sends the whole message
// back with a click, so a click on a message of twelve long questions is
// well past 64 KiB; it is taken, and the answer recorded.
func TestSlackClickOnAMessageOfTwelveRequests(t *testing.T) {
	apptest.EachBackend(t, app.Config{SlackSigningSecret: slackSecret, SlackUsers: "U0ALICE=alice"}, func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		agent := srv.ClientActingFor(t, "agent", []string{"alice"})
		_, task := apptest.SessionWithTask(t, ctx, agent, client.CreateTaskInput{Label: "billing migration", Requester: "alice"})
		if _, err := agent.RequireInput(ctx, task.TaskID, longRequests(12)); err != nil {
			t.Fatal(err)
		}
		msg := rendered(t, agent, task.TaskID)
		if len(msg.Blocks) != 1+2*12 {
			t.Fatalf("not every request shown: %d blocks", len(msg.Blocks))
		}
		block, button := control(t, msg, "answer:migration-step-11:choice-3")
		got := clickAnswers(t, srv, agent, task.TaskID, msg, block, button, "", 64<<10) // the cap it had
		if len(got.InputResponses) != 1 || got.InputResponses[0].RequestID != "migration-step-11" ||
			got.InputResponses[0].OptionID != "choice-3" {
			t.Fatalf("the answer: %+v", got.InputResponses)
		}
	})
}

// TestSlackClickOnTheLargestMessage: the largest message taskhook renders
// (as much as one call may ask, in characters that cost the most to
// encode), clicked with the longest answer a task takes typed in, fits the
// route's cap, and the answer is recorded.
func TestSlackClickOnTheLargestMessage(t *testing.T) {
	srv := apptest.Standalone(t, app.Config{SlackSigningSecret: slackSecret, SlackUsers: "U0ALICE=alice"})
	ctx := context.Background()
	agent := srv.ClientActingFor(t, "agent", []string{"alice"})
	_, task := apptest.SessionWithTask(t, ctx, agent, client.CreateTaskInput{Label: slacktest.Fill("🚀", 200), Requester: "alice"})
	if _, err := agent.RequireInput(ctx, task.TaskID, slacktest.LargestRequests("😀")); err != nil {
		t.Fatal(err)
	}
	msg := rendered(t, agent, task.TaskID)
	last := msg.Blocks[len(msg.Blocks)-2] // the last request shown: its input, then the count of those left out
	typed := slacktest.Fill("😀", 8000)    // the longest answer a task takes
	got := clickAnswers(t, srv, agent, task.TaskID, msg, last, *last.Element, typed, 256<<10)
	if len(got.InputResponses) != 1 || got.InputResponses[0].Text != typed {
		t.Fatalf("the answer: %d responses", len(got.InputResponses))
	}
}

// TestSlackSigninButton: a task waiting for a provider sign-in renders with
// a Sign in button, a link to its authorizationUrl. Slack opens the link
// itself and still sends the click: it is answered 200 with no body and
// changes nothing. A question answered beside it brings back a message
// whose Sign in button still links to a working sign-in.
func TestSlackSigninButton(t *testing.T) {
	eachSignin(t, "path", app.Config{SlackSigningSecret: slackSecret, SlackUsers: "U0ALICE=alice"}, func(t *testing.T, e *signinEnv) {
		ctx := context.Background()
		task := e.task(t, "alice")
		_, pending := e.ask(t, task.TaskID)
		if _, err := e.owner.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "deploy", Prompt: "Deploy?",
			Display: client.DisplayConfirmation}}); err != nil {
			t.Fatal(err)
		}
		before, err := e.owner.GetTask(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}

		msg := rendered(t, e.owner, task.TaskID)
		block, button := control(t, msg, "signin:"+pending.RequestID)
		if button.Type != slack.ElementButton || button.URL != pending.AuthorizationURL || button.Value != "" ||
			button.Text == nil || button.Text.Text != "Sign in" || !hasText(msg.Blocks, "The link works once") {
			t.Fatalf("the sign-in request in Slack: %+v in %+v", button, msg)
		}

		sl := slackApp{t: t, url: e.srv.URL}
		if r := sl.post(click("U0ALICE", block, button, ""), time.Now(), slackSecret); r.status != 200 || len(r.raw) != 0 {
			t.Fatalf("a click on Sign in: %d %s", r.status, r.raw)
		}
		if now, err := e.owner.GetTask(ctx, task.TaskID); err != nil || now.Revision != before.Revision ||
			now.Status != client.StatusInputRequired || len(now.InputResponses) != 0 {
			t.Fatalf("a click on Sign in changed the task: %+v %v", now, err)
		}
		metrics := e.open(t, e.srv.URL+"/metrics", "text/plain")
		if !strings.Contains(metrics.body, `taskhook_slack_interactions_total{outcome="ignored"} 1`) ||
			strings.Contains(metrics.body, `taskhook_slack_interactions_total{outcome="answered"}`) {
			t.Errorf("the click, counted: %s", metrics.body)
		}

		yesBlock, yes := control(t, msg, "answer:deploy:yes")
		r := sl.post(click("U0ALICE", yesBlock, yes, ""), time.Now(), slackSecret)
		if r.status != 200 || !r.reply.ReplaceOriginal {
			t.Fatalf("the question's click: %+v", r)
		}
		_, again := control(t, slack.Message{Blocks: r.reply.Blocks}, "signin:"+pending.RequestID)
		if again.URL != pending.AuthorizationURL {
			t.Fatalf("the reply's Sign in links to %q, want %q", again.URL, pending.AuthorizationURL)
		}
		if status, loc := e.visit(t, e.prov.Approve(t, again.URL)); status != http.StatusSeeOther || !strings.Contains(loc, "outcome=authorized") {
			t.Fatalf("the reply's link: %d %q", status, loc)
		}
		if o := completedOutcomes(t, e.owner, task.TaskID); len(o) != 1 || o[0] != "devbox:authorized" {
			t.Fatalf("authorization.completed: %v", o)
		}
	})
}
