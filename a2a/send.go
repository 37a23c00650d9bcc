package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tools"
)

// SendMessage starts a task or answers one, then waits until the task ends
// or needs input, unless configuration.returnImmediately.
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (_ a2a.SendMessageResult, err error) {
	defer h.done(ctx, "SendMessage", &err)
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := h.send(ctx, p, req)
	if err != nil {
		return nil, err
	}
	if req.Config == nil || !req.Config.ReturnImmediately {
		if t, err = h.settle(ctx, p, t); err != nil {
			return nil, err
		}
	}
	var historyLength *int
	if req.Config != nil {
		historyLength = req.Config.HistoryLength
	}
	return h.withHistory(ctx, p, t, historyLength)
}

// SendStreamingMessage starts a task or answers one, then streams it as
// SubscribeToTask does until it ends or needs input.
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return h.stream(ctx, "SendStreamingMessage", true, func(p authz.Principal) (tasks.Task, error) {
		return h.send(ctx, p, req)
	})
}

// send is what a message does: without a task id it calls a tool, with one
// it answers that task.
func (h *handler) send(ctx context.Context, p authz.Principal, req *a2a.SendMessageRequest) (tasks.Task, error) {
	msg := req.Message
	if msg == nil {
		return tasks.Task{}, a2a.NewError(a2a.ErrInvalidParams, "message: is required")
	}
	if msg.TaskID != "" {
		return h.answer(ctx, p, msg)
	}
	return h.call(ctx, p, msg, req.Metadata)
}

// call starts a task by calling the tool the message names (metadata.skill,
// on the message or the request), or the only tool the caller may call, in
// the session its contextId names (a new session when it names none).
func (h *handler) call(ctx context.Context, p authz.Principal, msg *a2a.Message, meta map[string]any) (tasks.Task, error) {
	name, err := h.skillOf(ctx, p, msg.Metadata, meta)
	if err != nil {
		return tasks.Task{}, err
	}
	args, err := arguments(msg.Parts)
	if err != nil {
		return tasks.Task{}, err
	}
	session := msg.ContextID
	if session == "" {
		raw, _, err := h.sessions.Create(ctx, p, sessions.CreateInput{}, idem.Key{})
		if err != nil {
			return tasks.Task{}, err
		}
		var s struct{ SessionID string }
		if err := json.Unmarshal(raw, &s); err != nil {
			return tasks.Task{}, fmt.Errorf("a new session: %w", err)
		}
		session = s.SessionID
	}
	reply, err := h.tools.Call(ctx, p, name, tools.CallInput{Arguments: args, SessionID: session}, idem.Key{})
	switch {
	case errors.Is(err, problem.ErrNotFound):
		return tasks.Task{}, a2a.NewError(a2a.ErrInvalidParams,
			fmt.Sprintf("no skill %q you may call, or no context %q of yours", name, msg.ContextID))
	case err != nil:
		return tasks.Task{}, err
	}
	return decode(reply.JSON)
}

// skillOf is the tool a message calls: the one metadata.skill names, or
// the only one the caller may call.
func (h *handler) skillOf(ctx context.Context, p authz.Principal, metas ...map[string]any) (string, error) {
	for _, m := range metas {
		v, ok := m["skill"]
		if !ok {
			continue
		}
		name, ok := v.(string)
		if !ok || name == "" {
			return "", a2a.NewError(a2a.ErrInvalidParams, "metadata.skill: must be the id of a skill")
		}
		return name, nil
	}
	page, err := h.tools.List(ctx, p, "", 2)
	if err != nil {
		return "", err
	}
	switch {
	case len(page.Items) == 0:
		return "", a2a.NewError(a2a.ErrInvalidParams, "there is no skill you may call")
	case len(page.Items) > 1:
		return "", a2a.NewError(a2a.ErrInvalidParams,
			"metadata.skill: name the skill to call, as you may call more than one (see GET /a2a/extendedAgentCard)")
	}
	var t struct{ Name string }
	if err := json.Unmarshal(page.Items[0], &t); err != nil {
		return "", fmt.Errorf("a listed tool: %w", err)
	}
	return t.Name, nil
}

// content reads a message's parts: its first data part as JSON (nil when
// it has none) and its text parts, in order. The error is a first data part
// that does not encode.
func content(parts a2a.ContentParts) (json.RawMessage, []string, error) {
	var data json.RawMessage
	var texts []string
	for _, part := range parts {
		if part == nil {
			continue
		}
		switch c := part.Content.(type) {
		case a2a.Data:
			if data != nil {
				continue
			}
			raw, err := json.Marshal(c.Value)
			if err != nil {
				return nil, nil, err
			}
			data = raw
		case a2a.Text:
			texts = append(texts, string(c))
		}
	}
	return data, texts, nil
}

// arguments are a tool call's arguments from a message's parts: the first
// data part, or else the text parts joined as {"text": ...}.
func arguments(parts a2a.ContentParts) (json.RawMessage, error) {
	data, texts, err := content(parts)
	if err != nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.parts: a data part that is not JSON")
	}
	if data != nil {
		return data, nil
	}
	if len(texts) == 0 {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "message.parts: a data part (the arguments) or a text part is required")
	}
	return json.Marshal(map[string]string{"text": strings.Join(texts, "\n")})
}

// answer answers the task's oldest open question with the message: a data
// part {requestId?, optionId?, text?, action?}, or text that is an option's
// id or label, or a free answer where the question allows one.
func (h *handler) answer(ctx context.Context, p authz.Principal, msg *a2a.Message) (tasks.Task, error) {
	id := string(msg.TaskID)
	t, _, err := h.tasks.Get(ctx, p, id)
	if err != nil {
		return tasks.Task{}, err
	}
	if msg.ContextID != "" && msg.ContextID != t.SessionID {
		return tasks.Task{}, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("contextId: task %s is in another context", id))
	}
	if t.Status.Terminal() {
		return tasks.Task{}, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is %s", id, t.Status))
	}
	ans, err := answerOf(t, msg.Parts)
	if err != nil {
		return tasks.Task{}, err
	}
	reply, err := h.tasks.Run(ctx, p, id, tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{ans},
		Answerer: tasks.Answerer{By: p.ID, Via: wire.ViaA2A}}, idem.Key{})
	if err != nil {
		return tasks.Task{}, err
	}
	return decode(reply.JSON)
}

// answerOf reads the answer a message gives to the task's open questions.
func answerOf(t tasks.Task, parts a2a.ContentParts) (tasks.Answer, error) {
	var given struct {
		RequestID string `json:"requestId"`
		OptionID  string `json:"optionId"`
		Text      string `json:"text"`
		Action    string `json:"action"`
	}
	data, texts, err := content(parts)
	if err != nil || data != nil && json.Unmarshal(data, &given) != nil {
		return tasks.Answer{}, a2a.NewError(a2a.ErrInvalidParams,
			"message.parts: a data part answers as {requestId?, optionId?, text?, action?}")
	}
	found := data != nil
	req, ok := openRequest(t, given.RequestID)
	if !ok {
		if given.RequestID != "" {
			return tasks.Answer{}, a2a.NewError(a2a.ErrInvalidParams,
				fmt.Sprintf("requestId: %s is not an open question of task %s", given.RequestID, t.TaskID))
		}
		return tasks.Answer{}, a2a.NewError(a2a.ErrInvalidParams,
			fmt.Sprintf("task %s has no open question to answer (state %s)", t.TaskID, state(t)))
	}
	ans := tasks.Answer{RequestID: req.RequestID, OptionID: given.OptionID, Text: given.Text, Action: given.Action}
	if found {
		return ans, nil
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if text == "" {
		return tasks.Answer{}, a2a.NewError(a2a.ErrInvalidParams, "message.parts: a text or data part with the answer is required")
	}
	for _, o := range req.Options {
		if text == o.ID || strings.EqualFold(text, o.Label) {
			ans.OptionID = o.ID
			return ans, nil
		}
	}
	ans.Text = text
	return ans, nil
}

// openRequest is the open question an answer goes to: the one id names, or
// the oldest a person may answer (a sign-in is closed by signing in).
func openRequest(t tasks.Task, id string) (tasks.InputRequest, bool) {
	for _, r := range t.InputRequests {
		if id != "" && r.RequestID == id || id == "" && r.Kind != wire.KindAuthorization {
			return r, true
		}
	}
	return tasks.InputRequest{}, false
}

// settle waits until the task ends or needs input, the caller leaves or the
// server drains, and answers the task as it then is.
func (h *handler) settle(ctx context.Context, p authz.Principal, t tasks.Task) (tasks.Task, error) {
	waiting := func(t tasks.Task) bool { return t.Status == tasks.Working }
	draining := h.tasks.Draining()
	for waiting(t) {
		next, _, err := h.tasks.PollFor(ctx, p, t.TaskID, tasks.MaxWait, func(t tasks.Task) bool { return !waiting(t) }).Wait(ctx)
		if err != nil {
			return tasks.Task{}, err
		}
		t = next
		select {
		case <-ctx.Done():
			return t, nil
		case <-draining:
			return t, nil
		default:
		}
	}
	return t, nil
}

// decode reads a task's JSON as the services answer it.
func decode(raw []byte) (tasks.Task, error) {
	var t tasks.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return tasks.Task{}, fmt.Errorf("a task's json: %w", err)
	}
	return t, nil
}
