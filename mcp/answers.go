package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
)

// An elicitation this server sends on a stream (2025-11-25) has a JSON-RPC
// id that names the task and the input request it asks: the client's answer
// may reach any replica, which routes it from the id alone. Request ids
// never hold a slash, and task ids none either.
const elicitIDPrefix = "taskhook/"

func elicitID(taskID, requestID string) string { return elicitIDPrefix + taskID + "/" + requestID }

// parseElicitID reads an id made by elicitID.
func parseElicitID(raw json.RawMessage) (taskID, requestID string, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil || !strings.HasPrefix(s, elicitIDPrefix) {
		return "", "", false
	}
	taskID, requestID, ok = strings.Cut(strings.TrimPrefix(s, elicitIDPrefix), "/")
	return taskID, requestID, ok && taskID != "" && requestID != "" && !strings.Contains(requestID, "/")
}

// answerOf is what an elicitation's result answers of request r: accept
// with the optionId or text of the form, decline, or cancel. The accept of
// a sign-in (a URL the person opens) answers nothing: the sign-in's return
// does. send is false when there is nothing to record.
func answerOf(r wire.InputRequest, res sdk.ElicitResult) (a wire.Answer, send bool, field string, msg string) {
	a.RequestID = r.RequestID
	switch res.Action {
	case wire.ActionDecline, wire.ActionCancel:
		a.Action = res.Action
		return a, true, "", ""
	case wire.ActionAccept:
	default:
		return a, false, "action", "must be accept, decline or cancel"
	}
	if r.Kind == wire.KindAuthorization {
		return a, false, "", ""
	}
	for name, v := range res.Content {
		s, isString := v.(string)
		switch {
		case name != answerFieldOpt && name != answerFieldText:
			continue // a field this server did not ask for: ignored
		case !isString:
			return a, false, "content." + name, "must be a string"
		case name == answerFieldOpt:
			a.OptionID = s
		default:
			a.Text = s
		}
	}
	if a.OptionID == "" && a.Text == "" {
		return a, false, "content", "an accepted answer needs optionId or text"
	}
	return a, true, "", ""
}

// answer records the answers the results give to the task's open input
// requests, as p. A result for a request that is not open (answered, never
// asked, or superseded) is ignored, as both generations say; so is a
// request answered by somebody else while this one was on its way.
// notFound is the answer for a task the caller may not see.
func (h *handler) answer(ctx context.Context, p authz.Principal, taskID string, results map[string]sdk.ElicitResult,
	notFound *rpcError) *rpcError {
	for attempt := 0; ; attempt++ {
		t, err := h.cfg.Backend.Task(ctx, p, taskID)
		if err != nil {
			return h.backendError(err, notFound)
		}
		var answers []wire.Answer
		for _, r := range t.InputRequests {
			res, ok := results[r.RequestID]
			if !ok {
				continue
			}
			a, send, field, msg := answerOf(r, res)
			if field != "" {
				return errInvalidParams("inputResponses."+r.RequestID+"."+field, msg)
			}
			if send {
				answers = append(answers, a)
			}
		}
		if len(answers) == 0 {
			return nil
		}
		sort.Slice(answers, func(i, j int) bool { return answers[i].RequestID < answers[j].RequestID })
		_, err = h.cfg.Backend.Answer(ctx, p, taskID, answers)
		if errors.Is(err, ErrNotOpen) && attempt == 0 {
			continue // read again: answer what is still open
		}
		if err != nil && !errors.Is(err, ErrNotOpen) {
			return h.backendError(err, notFound)
		}
		return nil
	}
}

// decodeResults reads a map of elicitation results (inputResponses).
func decodeResults(raw map[string]json.RawMessage) (map[string]sdk.ElicitResult, *rpcError) {
	out := make(map[string]sdk.ElicitResult, len(raw))
	for key, v := range raw {
		var res sdk.ElicitResult
		if err := json.Unmarshal(v, &res); err != nil {
			return nil, errInvalidParams("inputResponses."+key, "must be an elicitation result {action, content?}")
		}
		out[key] = res
	}
	return out, nil
}
