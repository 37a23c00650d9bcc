package api_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/slacksig"
)

// TestContractSlack drives the render route and the Slack interactions
// route, answers and refusals, over real HTTP through apitest.Transport.
func TestContractSlack(t *testing.T) {
	const secret = "slack-contract-secret"
	srv := apptest.Embedded(t, app.Config{SlackSigningSecret: secret, SlackUsers: "U0ALICE=alice,U0BOB=bob"})
	agent := newCaller(t, srv.URL, apptest.TokenActingFor(t, "agent", []string{"alice"}))
	var ses, task struct {
		SessionID string `json:"sessionId"`
		TaskID    string `json:"taskId"`
	}
	agent.want(agent.do("POST", "/v1/sessions", nil), 201, "", &ses)
	agent.want(agent.do("POST", "/v1/tasks", map[string]any{"sessionId": ses.SessionID, "label": "devbox", "requester": "alice"}), 201, "", &task)
	agent.want(agent.do("POST", "/v1/tasks/"+task.TaskID+"/input-requests", map[string]any{"requests": []any{
		map[string]any{"requestId": "deploy", "prompt": "Deploy?", "options": []any{
			map[string]any{"id": "go", "label": "Go", "style": "danger"}}, "allowFreeform": true}}}), 200, "", nil)

	render := "/v1/tasks/" + task.TaskID + "/render"
	var msg slack.Message
	agent.want(agent.do("GET", render+"?format=slack", nil), 200, "", &msg)
	alice, mallory, nobody := agent.as(apptest.Token(t, "alice")), agent.as(apptest.Token(t, "mallory")), agent.as("")
	alice.want(alice.do("GET", render+"?format=slack", nil), 200, "", nil)
	mallory.want(mallory.do("GET", render+"?format=slack", nil), 404, "not_found", nil)
	agent.want(agent.do("GET", render+"?format=html", nil), 400, "invalid_request", nil)
	agent.want(agent.do("GET", render, nil), 400, "invalid_request", nil)
	nobody.want(nobody.do("GET", render+"?format=slack", nil), 401, "unauthorized", nil)

	button := msg.Blocks[2].Elements[0]
	slackPost := func(user string, at time.Time, key string) reply {
		t.Helper()
		p, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]any{"id": user},
			"actions": []any{map[string]any{"type": "button", "action_id": button.ActionID, "value": button.Value}}})
		body := "payload=" + url.QueryEscape(string(p))
		ts := strconv.FormatInt(at.Unix(), 10)
		return nobody.do("POST", slackRoute, body, "Content-Type", "application/x-www-form-urlencoded",
			slacksig.HeaderTimestamp, ts, slacksig.HeaderSignature, slacksig.Sign([]byte(key), ts, []byte(body)))
	}
	agent.want(slackPost("U0ALICE", time.Now(), "wrong"), 401, "signature_invalid", nil)
	agent.want(slackPost("U0ALICE", time.Now().Add(-time.Hour), secret), 401, "signature_invalid", nil)
	var refusal slack.Reply
	agent.want(slackPost("U0BOB", time.Now(), secret), 200, "", &refusal)
	if refusal.ResponseType != "ephemeral" || refusal.Text != slack.RefusedNotRequester {
		t.Fatalf("bob's click: %+v", refusal)
	}
	var replaced slack.Reply
	agent.want(slackPost("U0ALICE", time.Now(), secret), 200, "", &replaced)
	if !replaced.ReplaceOriginal || len(replaced.Blocks) < 2 {
		t.Fatalf("alice's click: %+v", replaced)
	}
	agent.want(slackPost("U0ALICE", time.Now(), secret), 200, "", &refusal)
	if refusal.Text != slack.RefusedClosed {
		t.Fatalf("a second click: %+v", refusal)
	}

	// A signed payload that is not Slack's is a 400; a challenge is echoed.
	for body, status := range map[string]int{"payload=%7B%7D": 400, `{"type":"url_verification","challenge":"abc"}`: 200} {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		ct := "application/x-www-form-urlencoded"
		if body[0] == '{' {
			ct = "application/json"
		}
		r := nobody.do("POST", slackRoute, body, "Content-Type", ct,
			slacksig.HeaderTimestamp, ts, slacksig.HeaderSignature, slacksig.Sign([]byte(secret), ts, []byte(body)))
		if r.status != status {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}
