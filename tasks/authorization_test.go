package tasks

import (
	"errors"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/problem"
)

func signInRequest(id, conn string, expires time.Time) *InputRequest {
	return &InputRequest{RequestID: id, Kind: wire.KindAuthorization, Prompt: "Sign in", Connection: conn,
		AuthorizationURL: "https://provider.example/authorize?state=x", ExpiresAt: events.At(expires).String()}
}

func TestApplyRequireAndResolveAuthorization(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := Task{TaskID: ids.New(ids.TaskPrefix, 1), Owner: "o", Requester: "r", Status: Working, Revision: 1,
		InputResponses: []InputResponse{}}

	asked, err := Apply(task, Command{Kind: CmdRequireAuthorization, Authorization: signInRequest("a1", "github", now.Add(time.Minute))}, now)
	if err != nil || !asked.Changed || asked.Task.Status != InputRequired || asked.Task.Revision != 2 {
		t.Fatalf("require: %+v %v", asked.Task, err)
	}
	if got := types(asked); len(got) != 2 || got[0] != wire.EventTaskStatus || got[1] != wire.EventAuthorizationRequired {
		t.Fatalf("require events: %v", got)
	}

	again, err := Apply(asked.Task, Command{Kind: CmdRequireAuthorization, Authorization: signInRequest("a2", "github", now.Add(2*time.Minute))}, now)
	if err != nil || again.Changed {
		t.Fatalf("a second sign-in while one is pending changed the task: %+v %v", again, err)
	}

	later := now.Add(time.Minute) // the first attempt ran out: a new one replaces it
	replaced, err := Apply(asked.Task, Command{Kind: CmdRequireAuthorization, Authorization: signInRequest("a2", "github", later.Add(time.Minute))}, later)
	if err != nil || !replaced.Changed || len(replaced.Task.InputRequests) != 1 || replaced.Task.InputRequests[0].RequestID != "a2" {
		t.Fatalf("replace: %+v %v", replaced.Task, err)
	}
	signedIn := func(r InputResponse, at time.Time) bool {
		return r.AnsweredBy == "r" && r.Via == wire.ViaSignIn && r.AnsweredAt == events.At(at) && r.SlackUserID == ""
	}
	if r := replaced.Task.InputResponses; len(r) != 1 || r[0].RequestID != "a1" || r[0].OptionID != OutcomeExpired || !signedIn(r[0], later) {
		t.Fatalf("the expired request is not closed: %+v", r)
	}

	_, err = Apply(asked.Task, Command{Kind: CmdRespond, Responses: []Answer{{RequestID: "a1", OptionID: "authorized"}}, Answerer: Answerer{By: "r", Via: wire.ViaAPI}}, now)
	var verr *problem.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("an answer closed a sign-in: %v", err)
	}

	done, err := Apply(asked.Task, Command{Kind: CmdResolveAuthorization, RequestID: "a1", Outcome: OutcomeDeclined}, now)
	if err != nil || done.Task.Status != Working || len(done.Task.InputRequests) != 0 {
		t.Fatalf("resolve: %+v %v", done.Task, err)
	}
	if r := done.Task.InputResponses; len(r) != 1 || r[0].OptionID != OutcomeDeclined || !signedIn(r[0], now) {
		t.Fatalf("the sign-in's outcome is recorded as %+v", r)
	}
	if got := types(done); len(got) != 2 || got[0] != wire.EventAuthorizationCompleted || got[1] != wire.EventTaskStatus {
		t.Fatalf("resolve events: %v", got)
	}
	if d := done.Events[0].Data; d["outcome"] != OutcomeDeclined || d["connection"] != "github" {
		t.Fatalf("authorization.completed data: %v", d)
	}
	if _, err := Apply(done.Task, Command{Kind: CmdResolveAuthorization, RequestID: "a1", Outcome: OutcomeAuthorized}, now); !errors.Is(err, ErrInputClosed) {
		t.Fatalf("a second resolve: %v", err)
	}
	cancelled, _ := Apply(asked.Task, Command{Kind: CmdCancel}, now)
	if _, err := Apply(cancelled.Task, Command{Kind: CmdResolveAuthorization, RequestID: "a1", Outcome: OutcomeAuthorized}, now); !errors.Is(err, ErrTerminal) {
		t.Fatalf("resolve after cancel: %v", err)
	}
}

func types(c Change) []string { return c.types() }
