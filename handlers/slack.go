package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/slacksig"
	"github.com/taskhook/taskhook/tasks"
)

// Slack is the Slack app the interactions route serves: its signing secret
// and who each Slack user acts as.
type Slack struct {
	SigningSecret []byte
	Users         slack.Users
}

const (
	// maxSlackBody caps an interaction, which echoes the whole message
	// clicked: the largest a click on a message taskhook rendered can be.
	maxSlackBody = slack.MaxInteractionBytes
	// slackAnswerTime bounds the answer, so the reply is sent within the
	// 3 seconds Slack waits for it.
	slackAnswerTime = 2500 * time.Millisecond
)

// renderTask is GET /v1/tasks/{taskId}/render?format=slack: the task as a
// Block Kit message, for its owner or requester.
func (a *api) renderTask(w http.ResponseWriter, r *http.Request) {
	if f := r.URL.Query().Get("format"); f != "slack" {
		a.writeError(w, r, invalidRequest("format", "must be slack"))
		return
	}
	t, _, err := a.tasks.Get(r.Context(), principal(r), chi.URLParam(r, "taskId"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSlack(t, nil))
}

func renderSlack(t tasks.Task, asked []tasks.InputRequest) slack.Message {
	return slack.Render(wire.Task[events.Time, tasks.Status](t), asked)
}

// slackInteractions is POST /v1/channels/slack/interactions: a click or a
// typed answer in a message Render made. The signature is checked over the
// raw body before anything is parsed; then each answer is given as the
// Slack user's principal, who must be the task's requester. The reply is
// the message to put in place of the one clicked, or an ephemeral refusal
// with the task unchanged. The payload is never logged.
func (a *api) slackInteractions(w http.ResponseWriter, r *http.Request) {
	body, err := a.body.ReadUpTo(r, maxSlackBody)
	if err != nil {
		a.countSlack("unread")
		a.writeError(w, r, err)
		return
	}
	if err := slacksig.Verify(a.slack.SigningSecret, r.Header, body, time.Now(), 0); err != nil {
		a.countSlack("signature_invalid")
		a.writeError(w, r, apiError(http.StatusUnauthorized, wire.CodeSignatureInvalid, err.Error()))
		return
	}
	in, err := slack.ParseInteraction(body)
	if err != nil {
		a.countSlack("malformed")
		a.writeError(w, r, invalidRequest("payload", "is not a Slack interaction payload"))
		return
	}
	switch {
	case in.Type == slack.TypeURLVerification:
		a.countSlack("challenge")
		writeJSON(w, http.StatusOK, map[string]string{"challenge": in.Challenge})
		return
	case len(in.Answers) == 0:
		a.countSlack("ignored") // another type, or a control taskhook did not make
		w.WriteHeader(http.StatusOK)
		return
	}
	who, ok := a.slack.Users.Principal(in.UserID)
	if !ok {
		a.countSlack("unmapped")
		writeJSON(w, http.StatusOK, slack.Refusal(slack.RefusedUnmapped))
		return
	}
	answers := make([]tasks.TaskAnswer, len(in.Answers))
	for i, ans := range in.Answers {
		answers[i] = tasks.TaskAnswer{TaskID: ans.TaskID, Answer: tasks.Answer{RequestID: ans.RequestID, OptionID: ans.OptionID, Text: ans.Text}}
	}
	ctx, cancel := context.WithTimeout(r.Context(), slackAnswerTime)
	defer cancel()
	took := a.tasks.AnswerEach(ctx, tasks.Answerer{By: who, SlackUserID: in.UserID, Via: wire.ViaSlack}, answers)
	for range took.Taken {
		a.countSlack("answered")
	}
	var refusal string
	if took.Refused != nil {
		refusal = a.slackRefusal(r, took.Refused)
	}
	if took.Taken == 0 {
		writeJSON(w, http.StatusOK, slack.Refusal(refusal))
		return
	}
	// Answers given before a refusal stand: the message shows the task as
	// they left it.
	writeJSON(w, http.StatusOK, slack.Replace(renderSlack(took.Task, took.Asked)))
}

// slackRefusal counts a refused answer and says why, as the Slack user
// reads it.
func (a *api) slackRefusal(r *http.Request, err error) string {
	var verr *problem.ValidationError
	switch {
	case errors.Is(err, tasks.ErrNotRequester):
		a.countSlack("not_requester")
		return slack.RefusedNotRequester
	case errors.Is(err, tasks.ErrInputClosed):
		a.countSlack("closed")
		return slack.RefusedClosed
	case errors.As(err, &verr):
		a.countSlack("invalid")
		return slack.RefusedInvalid
	}
	a.countSlack("error")
	a.log.ErrorContext(r.Context(), "slack answer failed", "requestId", requestid.From(r.Context()), "err", err)
	return slack.RefusedUnavailable
}

func (a *api) countSlack(outcome string) {
	a.metrics.SlackInteractions.WithLabelValues(outcome).Inc()
}
