package mcp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskhook/taskhook/api/wire"
)

// callModern answers tools/call of the stateless generation: a task to a
// client that declared the tasks extension; otherwise the result once the
// task ends, asking the client's questions by input_required results
// (requestState names the task) when it declared elicitation.
func (h *handler) callModern(q *request) {
	p, e := readCall(q)
	if e != nil {
		q.fail(e)
		return
	}
	var t Task
	if p.RequestState != "" {
		if t, e = h.resume(q, p); e != nil {
			q.fail(e)
			return
		}
	} else {
		var toolErr *callToolResult
		if t, toolErr, e = h.call(q, p, false); e != nil || toolErr != nil {
			q.answerCall(toolErr, e)
			return
		}
		if q.caps.tasks {
			mt := newModernTask(t, resultTask, false)
			mt.Meta = h.serverMeta()
			q.reply(mt)
			return
		}
	}
	h.awaitCall(q, t)
}

func (q *request) answerCall(res *callToolResult, e *rpcError) {
	if e != nil {
		q.fail(e)
		return
	}
	q.reply(res)
}

// resume continues a call that answered input_required: the task its
// requestState names, with the answers of the retry recorded. The state is
// the task id as it is: the caller may resume only a task of its own, of
// the tool it calls, so a forged state can do no more than fail.
func (h *handler) resume(q *request, p callParams) (Task, *rpcError) {
	bad := errInvalidParams("requestState", "does not continue a call of this tool")
	t, err := h.cfg.Backend.Task(q.r.Context(), q.p, p.RequestState)
	if err != nil {
		return t, h.backendError(err, bad)
	}
	if t.Kind != p.Name {
		return t, bad
	}
	if len(p.InputResponses) > 0 {
		results, e := decodeResults(p.InputResponses)
		if e != nil {
			return t, e
		}
		if e := h.answer(q.r.Context(), q.p, t.TaskID, results, bad); e != nil {
			return t, e
		}
		if t, err = h.cfg.Backend.Task(q.r.Context(), q.p, t.TaskID); err != nil {
			return t, h.backendError(err, bad)
		}
	}
	return t, nil
}

// askable is the open requests of t the client can be asked.
func (q *request) askable(t Task) []wire.InputRequest {
	if t.Status != wire.StatusInputRequired {
		return nil
	}
	var out []wire.InputRequest
	for _, r := range t.InputRequests {
		if (r.Kind == wire.KindAuthorization && q.caps.url) || (r.Kind != wire.KindAuthorization && q.caps.form) {
			out = append(out, r)
		}
	}
	return out
}

// awaitCall answers a call from a client that takes no task once the task
// ends (or, stateless, needs an answer the client can give), with progress
// notifications on a stream when the client gave a progressToken.
func (h *handler) awaitCall(q *request, t Task) {
	done := func(t Task) bool { return wire.Terminal(t.Status) || (q.modern && len(q.askable(t)) > 0) }
	answer := func(t Task) (any, *rpcError) {
		if !wire.Terminal(t.Status) {
			reqs := map[string]inputReq{}
			for _, r := range q.askable(t) {
				reqs[r.RequestID] = inputReq{Method: methodElicit, Params: elicitParams(r, true)}
			}
			return inputRequiredResult{ResultType: resultInput, InputRequests: reqs, RequestState: t.TaskID,
				Meta: h.serverMeta()}, nil
		}
		if q.modern && t.Status == wire.StatusFailed {
			te := taskError(t)
			e := &rpcError{code: te.Code, message: te.Message, status: http.StatusOK}
			if len(te.Data) > 0 {
				e.data = te.Data
			}
			return nil, e
		}
		res := toolResult(t, q.modern)
		if q.modern {
			res.Meta = h.serverMeta()
		}
		return res, nil
	}
	asks := !q.modern && (q.caps.form || q.caps.url)
	asked := map[string]bool{}
	var progress float64
	q.await(t, q.progress != nil || asks, done, func(t Task) {
		if q.progress != nil && float64(t.Revision) > progress {
			progress = float64(t.Revision)
			_ = q.notify("", "notifications/progress", &sdk.ProgressNotificationParams{
				ProgressToken: json.RawMessage(q.progress), Progress: progress, Message: progressMessage(t)})
		}
		if asks {
			q.elicit(t, asked, false)
		}
	}, answer)
}

// failWait ends a request whose wait ended in err: nothing when the client
// left.
func (q *request) failWait(err error) {
	var e *rpcError
	switch {
	case errors.Is(err, errLeft):
		q.h.observe(q.label, "left")
	case errors.As(err, &e):
		q.fail(e)
	default:
		q.fail(q.h.backendError(err, errNoSuchTask()))
	}
}

// inputRequiredResult is a stateless call's answer while its task waits
// for answers the client can give: it retries with them and requestState.
type inputRequiredResult struct {
	ResultType    string              `json:"resultType"`
	InputRequests map[string]inputReq `json:"inputRequests"`
	RequestState  string              `json:"requestState"`
	Meta          map[string]any      `json:"_meta,omitempty"`
}

// progressMessage is a progress notification's text: the status message,
// and while the task waits for input, each question with where a person
// can answer it in a browser.
func progressMessage(t Task) string {
	if t.Status != wire.StatusInputRequired {
		return statusMessage(t)
	}
	lines := []string{}
	if t.StatusMessage != "" {
		lines = append(lines, t.StatusMessage)
	}
	for _, r := range t.InputRequests {
		link, verb := r.AnswerURL, "answer at"
		if r.Kind == wire.KindAuthorization {
			link, verb = r.AuthorizationURL, "sign in at"
		}
		line := r.Prompt
		if link != "" {
			line += " (" + verb + " " + link + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
