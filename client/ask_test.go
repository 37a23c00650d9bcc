package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

type asked struct {
	v   *client.Asked
	err error
}

// ask runs Ask in the background and waits until it long-polls the server.
func ask(t *testing.T, ctx context.Context, srv *apptest.Server, c *client.Client, taskID string, req client.InputRequest) <-chan asked {
	t.Helper()
	done := make(chan asked, 1)
	go func() {
		v, err := c.Ask(ctx, taskID, req)
		done <- asked{v, err}
	}()
	awaitWaiting(t, srv)
	return done
}

// askOn starts a server and a task of alice's to ask on, with a context that
// ends before the wait does.
func askOn(t *testing.T) (context.Context, *apptest.Server, *client.Client, *client.Task) {
	srv := apptest.Embedded(t, withTestDefaults(noRecheck))
	ctx, cancel := beforeTheWaitEnds(testContext(t))
	t.Cleanup(cancel)
	alice := newClient(t, srv.URL, apptest.Token(t, "alice"))
	return ctx, srv, alice, newTask(t, ctx, alice)
}

// askResult waits for the Ask that ask started and fails the test when it
// failed.
func askResult(t *testing.T, ctx context.Context, done <-chan asked) *client.Asked {
	t.Helper()
	r := await(t, ctx, done, "Ask")
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

// TestAsk: Ask blocks through progress and messages until its request is
// answered, through any channel, and answers with the answer.
func TestAsk(t *testing.T) {
	ctx, srv, alice, task := askOn(t)

	done := ask(t, ctx, srv, alice, task.TaskID, client.InputRequest{
		RequestID: "deploy", Prompt: "Deploy?", Options: []client.Choice{{ID: "go", Label: "Go"}, {ID: "stop", Label: "Stop"}},
	})
	msg := "building"
	if _, err := alice.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: &msg}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Message(ctx, task.TaskID, "still here", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("Ask answered before the question was: %+v, %v", r.v, r.err)
	default:
	}

	now, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.InputRequests) != 1 || now.InputRequests[0].AnswerURL == "" {
		t.Fatalf("open requests: %+v", now.InputRequests)
	}
	if _, err := alice.AnswerInput(ctx, now.InputRequests[0].AnswerURL, "stop", ""); err != nil {
		t.Fatal(err)
	}
	got := askResult(t, ctx, done)
	if got.Answer == nil || got.Answer.RequestID != "deploy" || got.Answer.OptionID != "stop" {
		t.Fatalf("answer: %+v", got.Answer)
	}
	if got.Task.Status != "working" {
		t.Errorf("task status %q, want working", got.Task.Status)
	}
}

// TestAskTaskEnds: a task that ends before its question is answered ends
// Ask with the task and no answer; a request without an id gets the one the
// server fills.
func TestAskTaskEnds(t *testing.T) {
	ctx, srv, alice, task := askOn(t)

	done := ask(t, ctx, srv, alice, task.TaskID, client.InputRequest{Prompt: "Why?", AllowFreeform: true})
	if _, err := alice.Cancel(ctx, task.TaskID, "not needed"); err != nil {
		t.Fatal(err)
	}
	got := askResult(t, ctx, done)
	if got.Answer != nil || got.Task.Status != "cancelled" {
		t.Fatalf("Ask of a cancelled task: answer %+v, status %q", got.Answer, got.Task.Status)
	}

	// Asking on a task that has ended is the command's refusal.
	if _, err := alice.Ask(ctx, task.TaskID, client.InputRequest{Prompt: "Again?"}); !client.IsCode(err, client.CodeTaskTerminal) {
		t.Fatalf("Ask on an ended task: %v", err)
	}
}

// TestAskServerFilledID: Ask follows the request the server named.
func TestAskServerFilledID(t *testing.T) {
	ctx, srv, alice, task := askOn(t)
	if _, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "first", Prompt: "First?"}}); err != nil {
		t.Fatal(err)
	}

	done := ask(t, ctx, srv, alice, task.TaskID, client.InputRequest{Prompt: "Second?", AllowFreeform: true})
	// Answering the other request wakes Ask, which goes on waiting.
	if _, err := alice.Respond(ctx, task.TaskID, []client.Answer{{RequestID: "first", OptionID: "yes"}}); err != nil {
		t.Fatal(err)
	}
	now, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.InputRequests) != 1 {
		t.Fatalf("open requests: %+v", now.InputRequests)
	}
	second := now.InputRequests[0].RequestID
	awaitWaiting(t, srv)
	if _, err := alice.Respond(ctx, task.TaskID, []client.Answer{{RequestID: second, Text: "because"}}); err != nil {
		t.Fatal(err)
	}
	got := askResult(t, ctx, done)
	if got.Answer == nil || got.Answer.RequestID != second || got.Answer.Text != "because" {
		t.Fatalf("answer: %+v", got.Answer)
	}
}

// TestStartAsk: StartAsk returns as soon as the question is asked, with the
// answer URL to hand to a person; Wait then blocks until that person
// answers, and the answer says it came through the link. A StartAsk retried
// with its idempotency key after the answer asks nothing more, and its Wait
// answers at once.
func TestStartAsk(t *testing.T) {
	ctx, srv, alice, task := askOn(t)

	q, err := alice.StartAsk(ctx, task.TaskID, client.InputRequest{RequestID: "deploy", Prompt: "Deploy?"},
		client.WithIdempotencyKey("ask-deploy"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Request.RequestID != "deploy" || !strings.HasPrefix(q.Request.AnswerURL, srv.URL+"/v1/input/ans_") ||
		q.Task.Status != client.StatusInputRequired {
		t.Fatalf("the question: %+v, task %+v", q.Request, q.Task)
	}
	done := make(chan asked, 1)
	go func() {
		v, err := q.Wait(ctx)
		done <- asked{v, err}
	}()
	awaitWaiting(t, srv)
	if _, err := client.New(srv.URL, "").AnswerInput(ctx, q.Request.AnswerURL, "yes", ""); err != nil {
		t.Fatal(err)
	}
	got := askResult(t, ctx, done)
	if a := got.Answer; a == nil || a.RequestID != "deploy" || a.OptionID != "yes" || a.AnsweredBy != client.AnsweredByAnswerLink ||
		a.Via != client.ViaAnswerLink || a.AnsweredAt.IsZero() {
		t.Fatalf("answer: %+v", got.Answer)
	}

	again, err := alice.StartAsk(ctx, task.TaskID, client.InputRequest{RequestID: "deploy", Prompt: "Deploy?"},
		client.WithIdempotencyKey("ask-deploy"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Request.RequestID != "deploy" {
		t.Fatalf("the retried question: %+v", again.Request)
	}
	if now, err := alice.GetTask(ctx, task.TaskID); err != nil || len(now.InputRequests) != 0 || now.Revision != got.Task.Revision {
		t.Fatalf("the retry asked again: %+v %v", now, err)
	}
	if retried, err := again.Wait(ctx); err != nil || retried.Answer == nil || retried.Answer.OptionID != "yes" {
		t.Fatalf("Wait of the retried question: %+v %v", retried, err)
	}
}
