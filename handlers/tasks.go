package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/strictjson"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// getTask reads a task; with afterRevision and wait it long-polls until the
// revision is above afterRevision or, with kinds, until an event of those
// types is in the log after it.
func (a *api) getTask(w http.ResponseWriter, r *http.Request) {
	after, wait, kinds, err := parseTaskPoll(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, id := principal(r), chi.URLParam(r, "taskId")
	begin := func(ctx context.Context) *tasks.Poll {
		if after >= 0 && !kinds.All() {
			return a.tasks.PollKinds(ctx, p, id, after, kinds, wait)
		}
		return a.tasks.PollFor(ctx, p, id, wait, tasks.AfterRevision(after))
	}
	a.servePoll(w, r, wait, begin, func(w http.ResponseWriter, r *http.Request, _ tasks.Task, raw []byte, err error) {
		a.writeRead(w, r, raw, err)
	})
}

// parseTaskPoll reads the long poll of a task read: ?afterRevision= (-1
// when absent, and then no wait), ?wait= and ?kinds=.
func parseTaskPoll(r *http.Request) (after int64, wait time.Duration, kinds waits.Kinds, err error) {
	if wait, err = parseWait(r); err != nil {
		return 0, 0, kinds, err
	}
	if kinds, err = parseKinds(r); err != nil {
		return 0, 0, kinds, err
	}
	after = -1
	if v := r.URL.Query().Get("afterRevision"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, kinds, invalidRequest("afterRevision", "must be a whole number, 0 or more")
		}
		after = n
	}
	if after < 0 {
		wait = 0
	}
	return after, wait, kinds, nil
}

// taskResult answers 200 once the task is terminal, 202 with the task as it
// is when the wait runs out first.
func (a *api) taskResult(w http.ResponseWriter, r *http.Request) {
	wait, err := parseWait(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p, id := principal(r), chi.URLParam(r, "taskId")
	begin := func(ctx context.Context) *tasks.Poll { return a.tasks.PollResult(ctx, p, id, wait) }
	a.servePoll(w, r, wait, begin, func(w http.ResponseWriter, r *http.Request, t tasks.Task, raw []byte, err error) {
		switch {
		case err != nil:
			a.writeError(w, r, err)
		case !t.Status.Terminal():
			writeRaw(w, http.StatusAccepted, raw)
		default:
			writeRaw(w, http.StatusOK, raw)
		}
	})
}

func (a *api) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := tasks.ListFilter{SessionID: q.Get("sessionId"), Status: tasks.Status(q.Get("status")), Kind: q.Get("kind"), Role: q.Get("role")}
	a.serveList(w, r, func(cursor string, limit int) (paging.Page, error) {
		return a.tasks.List(r.Context(), principal(r), f, cursor, limit)
	})
}

func (a *api) taskEvents(w http.ResponseWriter, r *http.Request) {
	p, id := principal(r), chi.URLParam(r, "taskId")
	a.serveEvents(w, r, func(ctx context.Context, q waits.LogQuery) *waits.LogPoll {
		return a.tasks.PollEvents(ctx, p, id, q)
	})
}

// Command bodies, one per route.
type (
	progressBody struct {
		StatusMessage *string         `json:"statusMessage"`
		Progress      json.RawMessage `json:"progress"`
	}
	messageBody struct {
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	}
	requestBody struct {
		RequestID     string         `json:"requestId"`
		Kind          string         `json:"kind"`
		Prompt        string         `json:"prompt"`
		Display       string         `json:"display"`
		Options       []tasks.Option `json:"options"`
		AllowFreeform bool           `json:"allowFreeform"`
		Connection    string         `json:"connection"`
		ExpiresAt     string         `json:"expiresAt"`
	}
	inputRequestsBody struct {
		Requests []requestBody `json:"requests"`
	}
	inputBody struct {
		Responses []tasks.Answer `json:"responses"`
	}
	completeBody struct {
		Result json.RawMessage `json:"result"`
	}
	failBody struct {
		Error *tasks.TaskError `json:"error"`
	}
	cancelBody struct {
		Reason string `json:"reason"`
	}
	releaseBody struct{}
)

// decodeCommand reads the route's body into a command.
func decodeCommand(kind tasks.CommandKind, body []byte) (tasks.Command, error) {
	cmd := tasks.Command{Kind: kind}
	var err error
	switch kind {
	case tasks.CmdProgress:
		err = decodeInto(body, func(b progressBody) { cmd.StatusMessage, cmd.Progress = b.StatusMessage, b.Progress })
	case tasks.CmdMessage:
		err = decodeInto(body, func(b messageBody) { cmd.Text, cmd.Data = b.Text, b.Data })
	case tasks.CmdRequireInput:
		err = decodeInto(body, func(b inputRequestsBody) {
			for _, q := range b.Requests {
				cmd.Requests = append(cmd.Requests, tasks.InputRequest{
					RequestID: q.RequestID, Kind: q.Kind, Prompt: q.Prompt, Display: q.Display,
					Options: q.Options, AllowFreeform: q.AllowFreeform, Connection: q.Connection, ExpiresAt: q.ExpiresAt,
				})
			}
		})
	case tasks.CmdRespond:
		err = decodeInto(body, func(b inputBody) { cmd.Responses = b.Responses })
	case tasks.CmdComplete:
		err = decodeInto(body, func(b completeBody) { cmd.Result = b.Result })
	case tasks.CmdFail:
		err = decodeInto(body, func(b failBody) { cmd.Error = b.Error })
	case tasks.CmdCancel:
		err = decodeInto(body, func(b cancelBody) { cmd.Reason = b.Reason })
	case tasks.CmdRelease:
		err = strictjson.Decode(body, &releaseBody{})
	}
	return cmd, err
}

// decodeInto decodes body as a B and hands it to set (as decoded so far,
// when decoding fails).
func decodeInto[B any](body []byte, set func(B)) error {
	var b B
	err := strictjson.Decode(body, &b)
	set(b)
	return err
}

func (a *api) taskCommand(kind tasks.CommandKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, p, key, ok := a.readPost(w, r)
		if !ok {
			return
		}
		cmd, err := decodeCommand(kind, body)
		if err == nil && kind == tasks.CmdRespond {
			cmd.Answerer, err = answererOf(r, p)
		}
		var reply idem.Reply
		if err == nil {
			reply, err = a.tasks.Run(r.Context(), p, chi.URLParam(r, "taskId"), cmd, key)
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		writeReplayable(w, http.StatusOK, reply.JSON, reply.Replayed)
	}
}

// answererOf is who answers through POST .../input: the caller's principal,
// through the face its X-Taskhook-Via header names (api when it names none).
// The header only says which of the principal's own clients answered: who
// answered is the token's to say, and the faces that answer without one
// (answer links, Slack, MCP) record themselves.
func answererOf(r *http.Request, p authz.Principal) (tasks.Answerer, error) {
	via := r.Header.Get(wire.HeaderVia)
	switch via {
	case "":
		via = wire.ViaAPI
	case wire.ViaAPI, wire.ViaConsole:
	default:
		return tasks.Answerer{}, invalidRequest(wire.HeaderVia, "must be "+wire.ViaAPI+" or "+wire.ViaConsole)
	}
	return tasks.Answerer{By: p.ID, Via: via}, nil
}

// cancelTask cancels a task; with ?wait= it answers once the executor has
// released the task (releasedAt), or with the task as it is when the wait
// runs out.
func (a *api) cancelTask(w http.ResponseWriter, r *http.Request) {
	wait, err := parseWait(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	serveWrite(a, w, r, http.StatusOK, func(ctx context.Context, p authz.Principal, in cancelBody, key idem.Key) (idem.Reply, error) {
		return a.tasks.Cancel(ctx, p, chi.URLParam(r, "taskId"), in.Reason, key, wait)
	})
}

// answerInput answers one input request through its answer URL: no JWT, the
// token in the path is the capability. The path (and so the token) is never
// logged: the request log has the route template only. The token is
// resolved before the body is read, so an answer to an unknown or dead token
// costs no body bytes.
func (a *api) answerInput(w http.ResponseWriter, r *http.Request) {
	scope, err := idempotencyScope(r, authz.Principal{})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	target, err := a.tasks.ResolveAnswer(r.Context(), chi.URLParam(r, "token"), idem.Key{Scope: scope})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var in tasks.AnswerInput
	_, key, ok := a.decodePost(w, r, &in)
	if !ok {
		return
	}
	ans, replayed, err := a.tasks.Answer(r.Context(), target, in, key)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, ans)
}
