package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// replica is one replica's task service on a shared store. Its fan-in is not
// started, so its snapshot cache holds only what this replica read or wrote:
// a stale snapshot is certain, not a race.
func replica(s *store.Store) *tasks.Service {
	w := waits.New(waits.Config{}, nil, time.Now)
	return tasks.NewService(tasks.Config{}, s, w, metrics.New(), time.Now)
}

func decodeTask(t *testing.T, raw []byte) tasks.Task {
	t.Helper()
	var task tasks.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// startTask opens a session for owner and starts a task in it through svc:
// the task's id.
func startTask(t *testing.T, s *store.Store, svc *tasks.Service, owner authz.Principal) string {
	t.Helper()
	ctx := context.Background()
	ses := sessions.NewService(sessions.Config{}, s, waits.New(waits.Config{}, nil, time.Now), time.Now)
	sraw, _, err := ses.Create(ctx, owner, sessions.CreateInput{}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var session sessions.Session
	if err := json.Unmarshal(sraw, &session); err != nil {
		t.Fatal(err)
	}
	created, err := svc.Create(ctx, owner, tasks.CreateInput{SessionID: session.SessionID}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	return decodeTask(t, created.JSON).TaskID
}

// A command decided on a stale cached snapshot loses the compare-and-set and
// is decided again on the stored task the script returned, and on that task
// alone: nothing of the stale snapshot may leak into the write.
func TestRunRetriesOnTheStoredTaskOnly(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		a, other := replica(s), replica(s)
		owner := authz.Principal{ID: "stale-owner"}
		id := startTask(t, s, a, owner)
		ask := func(rid string) tasks.Command {
			return tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{{RequestID: rid, Prompt: "ok?"}}}
		}
		// a caches the task as input_required with r1 open ...
		if _, err := a.Run(ctx, owner, id, ask("r1"), idem.Key{}); err != nil {
			t.Fatal(err)
		}
		// ... another replica answers r1: the task is working again ...
		resp := tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "r1", OptionID: "yes"}}, Answerer: tasks.Answerer{By: owner.ID, Via: "api"}}
		if _, err := other.Run(ctx, owner, id, resp, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		// ... and a asks again from its stale snapshot.
		reply, err := a.Run(ctx, owner, id, ask("r2"), idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		got := decodeTask(t, reply.JSON)
		if got.Revision != 4 || len(got.InputRequests) != 1 || got.InputRequests[0].RequestID != "r2" {
			t.Fatalf("after the retry: revision %d, open requests %+v; want 4 and only r2", got.Revision, got.InputRequests)
		}
		_, stored, err := other.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := decodeTask(t, stored); len(st.InputRequests) != 1 || st.InputRequests[0].RequestID != "r2" {
			t.Fatalf("stored open requests %+v; want only r2", st.InputRequests)
		}
	})
}

// The answers a channel gives together are taken in order until one is
// refused: those before it stand, those after it are not given, and the
// task is shown as the last answer taken left it.
func TestAnswerEachStopsAtTheFirstRefusal(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "each-owner"}
		id := startTask(t, s, svc, owner)
		ask := tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{
			{RequestID: "r1", Prompt: "first?"}, {RequestID: "r2", Prompt: "second?"},
		}}
		if _, err := svc.Run(ctx, owner, id, ask, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		by := tasks.Answerer{By: owner.ID, Via: "slack", SlackUserID: "U1"}
		answer := func(rid string) tasks.TaskAnswer {
			return tasks.TaskAnswer{TaskID: id, Answer: tasks.Answer{RequestID: rid, OptionID: "yes"}}
		}

		took := svc.AnswerEach(ctx, tasks.Answerer{By: "someone-else", Via: "slack"}, []tasks.TaskAnswer{answer("r1")})
		if took.Taken != 0 || !errors.Is(took.Refused, tasks.ErrNotRequester) {
			t.Fatalf("from another principal: %+v, want none taken and ErrNotRequester", took)
		}

		took = svc.AnswerEach(ctx, by, []tasks.TaskAnswer{answer("r1"), answer("r1"), answer("r2")})
		if took.Taken != 1 || !errors.Is(took.Refused, tasks.ErrInputClosed) {
			t.Fatalf("taken %d, refused %v; want 1 taken, then ErrInputClosed", took.Taken, took.Refused)
		}
		if took.Task.TaskID != id || len(took.Task.InputRequests) != 1 || took.Task.InputRequests[0].RequestID != "r2" || len(took.Asked) != 2 {
			t.Fatalf("shown: open %+v, asked %+v; want r2 open after r1, both asked before", took.Task.InputRequests, took.Asked)
		}
		_, stored, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := decodeTask(t, stored); len(st.InputRequests) != 1 || st.InputRequests[0].RequestID != "r2" {
			t.Fatalf("stored open requests %+v; want r2, unanswered after the refusal", st.InputRequests)
		}
	})
}
