package callbacks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/channels/slack"
)

// SlackConfig lets the dispatcher post to Slack: a Slack endpoint's question
// is posted to its channel (chat.postMessage) and the same message updated
// (chat.update) when the question is answered or the task ends.
type SlackConfig struct {
	Token  string // the bot token (xoxb-...)
	APIURL string // the Web API's base; default https://slack.com/api/
}

// DefaultSlackAPIURL is Slack's Web API.
const DefaultSlackAPIURL = "https://slack.com/api/"

// slackAPI calls the two methods of Slack's Web API the dispatcher needs.
type slackAPI struct {
	cfg    SlackConfig
	client *http.Client
}

func newSlackAPI(cfg SlackConfig, timeout time.Duration) *slackAPI {
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultSlackAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	return &slackAPI{cfg: cfg, client: &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// slackReply is the part of a Web API answer the dispatcher reads.
type slackReply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// call POSTs one Web API method and returns its answer, or the outcome of a
// call that did not succeed.
func (a *slackAPI) call(ctx context.Context, method string, body any) (slackReply, Outcome) {
	b, err := json.Marshal(body)
	if err != nil {
		return slackReply{}, Outcome{Kind: Dropped, Reason: "message cannot be encoded"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.APIURL+method, bytes.NewReader(b))
	if err != nil {
		return slackReply{}, Outcome{Kind: Dead, Reason: "slack api url is not usable"}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	resp, err := a.client.Do(req)
	if err != nil {
		return slackReply{}, transportOutcome(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return slackReply{}, statusOutcome(resp, time.Now())
	}
	var r slackReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&r); err != nil {
		return slackReply{}, Outcome{Kind: Retry, Status: resp.StatusCode, Reason: "slack answered no JSON"}
	}
	if !r.OK {
		return r, slackErrorOutcome(r.Error)
	}
	return r, Outcome{Kind: Delivered, Status: resp.StatusCode}
}

// slackErrorOutcome maps an {"ok":false} error: the channel or the token is
// gone for good (the endpoint dies), Slack is busy (try again), or this one
// message was refused (dropped).
func slackErrorOutcome(code string) Outcome {
	reason := "slack: " + code
	switch code {
	case "channel_not_found", "is_archived", "not_in_channel", "invalid_auth", "account_inactive",
		"token_revoked", "not_authed", "missing_scope":
		return Outcome{Kind: Dead, Reason: reason}
	case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
		return Outcome{Kind: Retry, Reason: reason}
	}
	return Outcome{Kind: Dropped, Reason: reason}
}

// slackEvent is what the dispatcher reads of an event for Slack.
type slackEvent struct {
	Type   string `json:"type"`
	TaskID string `json:"taskId"`
}

// deliverSlack posts a task's question or sign-in to the endpoint's
// channel, or updates the message it posted before, showing the task as it
// is now: one
// delivery at a time per Slack endpoint (see take), so the last update
// shows the latest state whatever order the events came in. The message's
// channel and ts are kept with the task (store.SlackMessage), with the
// revision it shows; a message that shows the current revision already is
// left alone.
func (d *Dispatcher) deliverSlack(ctx context.Context, p int, channel string, endpointID string, event []byte) Outcome {
	if d.slack == nil {
		return Outcome{Kind: Dead, Reason: "slack is not configured"}
	}
	var ev slackEvent
	if err := json.Unmarshal(event, &ev); err != nil || ev.TaskID == "" {
		return Outcome{Kind: Dropped, Reason: "not a task event"}
	}
	task, msg, found, err := d.store.SlackView(ctx, p, ev.TaskID, endpointID)
	if err != nil {
		return Outcome{Kind: Retry, Reason: "store unavailable"}
	}
	if !found && ev.Type != wire.EventInputRequested && ev.Type != wire.EventAuthorizationRequired {
		return Outcome{Kind: Delivered, Reason: "no message to update"}
	}
	if task == nil {
		return Outcome{Kind: Dropped, Reason: "the task is gone"}
	}
	var t wire.Task[json.RawMessage, string]
	if err := json.Unmarshal(task, &t); err != nil {
		return Outcome{Kind: Dropped, Reason: "task cannot be read"}
	}
	if found && msg.Revision >= t.Revision {
		return Outcome{Kind: Delivered, Reason: "the message shows this already"}
	}
	// The message keeps every request it showed, so an answer shows its
	// option's label after the request has left the task.
	var asked []wire.InputRequest
	_ = json.Unmarshal(msg.Asked, &asked) // none yet: nil
	asked = appendNew(asked, t.InputRequests)
	if msg.Asked, err = json.Marshal(asked); err != nil {
		return Outcome{Kind: Dropped, Reason: "task cannot be read"}
	}
	// Shown as readers get it only now, after asked was kept: the store
	// holds no sign-in's attempt.
	d.cfg.Links.ShowRequests(t.TaskID, t.InputRequests)
	m := slack.Render(t, asked)
	body := map[string]any{"channel": channel, "text": m.Text, "blocks": m.Blocks}
	method := "chat.postMessage"
	if found {
		method = "chat.update"
		body["channel"], body["ts"] = msg.Channel, msg.TS
	}
	reply, out := d.slack.call(ctx, method, body)
	if out.Kind != Delivered {
		return out
	}
	if !found {
		msg.Channel, msg.TS = reply.Channel, reply.TS
	}
	msg.Revision = t.Revision
	if err := d.store.RecordSlackMessage(ctx, p, ev.TaskID, endpointID, msg); err != nil {
		// Posted but not recorded: a retry would post a second message, so
		// this counts as delivered, and later events find no message.
		d.logWarn("slack message not recorded", p, err)
	}
	return out
}

// appendNew adds the requests of reqs that asked does not hold yet.
func appendNew(asked, reqs []wire.InputRequest) []wire.InputRequest {
	for _, r := range reqs {
		if !slices.ContainsFunc(asked, func(a wire.InputRequest) bool { return a.RequestID == r.RequestID }) {
			asked = append(asked, r)
		}
	}
	return asked
}
