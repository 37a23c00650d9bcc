package app_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// signIn has the principal cl sign in to devbox through a task of its own,
// and returns the token its own task is then given.
func (e *signinEnv) signIn(t *testing.T, cl *client.Client) *client.ConnectionToken {
	t.Helper()
	ctx := context.Background()
	_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	_, pending, err := cl.Authorize(ctx, task.TaskID, "devbox", nil)
	if err != nil || pending == nil {
		t.Fatalf("the first ask of %s's task: %+v %v", task.Owner, pending, err)
	}
	e.visit(t, e.prov.Approve(t, pending.AuthorizationURL))
	tok, _, err := cl.Authorize(ctx, task.TaskID, "devbox", nil)
	if err != nil || tok == nil {
		t.Fatalf("the ask after %s's sign-in: %+v %v", task.Owner, tok, err)
	}
	return tok
}

// refused checks that err is the 403 of a requester the caller may not act
// for.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	var cerr *client.Error
	if !errors.As(err, &cerr) || cerr.Status != http.StatusForbidden || cerr.Code != client.CodeRequesterNotAllowed {
		t.Errorf("%s: %v, want 403 %s", what, err, client.CodeRequesterNotAllowed)
	}
}

// Mallory names alice as the requester of her task: refused with nothing
// written, so she can neither take alice's token, nor plant one of her own
// sign-ins in alice's vault, nor drop alice's. Where the create is let
// through the test carries the whole attack on, to show what it costs.
func TestRequesterNotAllowed(t *testing.T) {
	eachSignin(t, "path", app.Config{}, func(t *testing.T, e *signinEnv) {
		ctx := context.Background()
		alice := e.srv.Client(t, "alice")
		mallory := e.srv.Client(t, "mallory")
		before := e.signIn(t, alice)

		ses := apptest.Session(t, ctx, mallory)
		for _, in := range []client.CreateTaskInput{
			{SessionID: ses.SessionID, Requester: "alice"},
			{SessionID: ses.SessionID, Requester: "alice", Label: "with a key"},
		} {
			var opts []client.CallOption
			if in.Label != "" {
				opts = append(opts, client.WithIdempotencyKey("k1"))
			}
			task, err := mallory.CreateTask(ctx, in, opts...)
			refused(t, "mallory names alice ("+in.Label+")", err)
			if task == nil {
				continue
			}
			// Let through: the token itself, then a wider sign-in of
			// mallory's own stored as alice's, then alice's token dropped.
			if tok, _, _ := mallory.Authorize(ctx, task.TaskID, "devbox", nil); tok != nil {
				t.Errorf("mallory was handed alice's token")
			}
			if _, pending, _ := mallory.Authorize(ctx, task.TaskID, "devbox", []string{"admin"}); pending != nil {
				e.visit(t, e.prov.Approve(t, pending.AuthorizationURL))
			}
			_, _ = mallory.Reject(ctx, task.TaskID, "devbox")
		}

		// Nothing was written: no task, no event, and the key is free.
		list, err := mallory.ListTasks(ctx, client.ListTasksParams{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("mallory's tasks after the refusals: %+v %v", list, err)
		}
		evs, err := mallory.SessionEvents(ctx, ses.SessionID, client.EventsParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Events {
			if ev.Type != client.EventSessionCreated {
				t.Errorf("mallory's session logged %s", ev.Type)
			}
		}
		own, err := mallory.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID}, client.WithIdempotencyKey("k1"))
		if err != nil || own.Requester != "mallory" {
			t.Errorf("mallory's own task under the refused key: %+v %v", own, err)
		}
		// There is no task of alice's mallory may reach to reject through.
		var cerr *client.Error
		aliceTasks, err := alice.ListTasks(ctx, client.ListTasksParams{})
		if err != nil || len(aliceTasks.Items) != 1 {
			t.Fatalf("alice's tasks: %+v %v", aliceTasks, err)
		}
		if _, err := mallory.Reject(ctx, aliceTasks.Items[0].TaskID, "devbox"); !errors.As(err, &cerr) || cerr.Status != http.StatusNotFound {
			t.Errorf("mallory rejects through alice's task: %v", err)
		}

		// Alice's vault is as she left it.
		_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{})
		after, pending, err := alice.Authorize(ctx, task.TaskID, "devbox", nil)
		if err != nil || after == nil || pending != nil {
			t.Fatalf("alice's token after mallory's attempts: %+v %+v %v", after, pending, err)
		}
		if after.AccessToken != before.AccessToken || !slices.Equal(after.Scopes, before.Scopes) ||
			!slices.Equal(after.Scopes, []string{"repo", "read"}) {
			t.Errorf("alice's token changed: %q %v, was %q %v", after.AccessToken, after.Scopes, before.AccessToken, before.Scopes)
		}
	})
}

// A token with the delegate scope may name anybody, one whose act_for lists
// alice may name her and nobody else, admin is not enough; and the grant
// must still be there when the task's token is asked for, and when an
// Idempotency-Key would replay the create.
func TestRequesterDelegated(t *testing.T) {
	eachSignin(t, "state", app.Config{}, func(t *testing.T, e *signinEnv) {
		ctx := context.Background()
		alices := e.signIn(t, e.srv.Client(t, "alice"))

		delegate := client.New(e.srv.URL, apptest.Token(t, "agent", "delegate"))
		assistant := client.New(e.srv.URL, apptest.TokenActingFor(t, "assistant", []string{"alice"}))
		for name, cl := range map[string]*client.Client{"delegate": delegate, "act_for": assistant} {
			_, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{Requester: "alice"})
			if task.Requester != "alice" {
				t.Fatalf("%s: the task's requester is %q", name, task.Requester)
			}
			tok, _, err := cl.Authorize(ctx, task.TaskID, "devbox", nil)
			if err != nil || tok == nil || tok.AccessToken != alices.AccessToken {
				t.Errorf("%s: alice's token for the task: %+v %v", name, tok, err)
			}
		}

		ses := apptest.Session(t, ctx, assistant)
		_, err := assistant.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Requester: "bob"})
		refused(t, "act_for alice names bob", err)
		self, err := assistant.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Requester: "assistant"})
		if err != nil || self.Requester != "assistant" {
			t.Errorf("naming itself: %+v %v", self, err)
		}

		root := client.New(e.srv.URL, apptest.Token(t, "root", "admin"))
		rootSes := apptest.Session(t, ctx, root)
		_, err = root.CreateTask(ctx, client.CreateTaskInput{SessionID: rootSes.SessionID, Requester: "alice"})
		refused(t, "admin names alice", err)

		// The grant is checked again at each use: an admin reading the
		// task, or its owner with a token that lost the grant, gets no
		// token and drops none.
		in := client.CreateTaskInput{SessionID: ses.SessionID, Requester: "alice", Label: "keyed"}
		task, err := assistant.CreateTask(ctx, in, client.WithIdempotencyKey("k1"))
		if err != nil {
			t.Fatal(err)
		}
		revoked := client.New(e.srv.URL, apptest.Token(t, "assistant"))
		_, err = revoked.CreateTask(ctx, in, client.WithIdempotencyKey("k1"))
		refused(t, "a replay once the grant is gone", err)
		for name, cl := range map[string]*client.Client{"admin": root, "owner without the grant": revoked} {
			_, _, err := cl.Authorize(ctx, task.TaskID, "devbox", nil)
			refused(t, name+" asks for alice's token", err)
			_, err = cl.Reject(ctx, task.TaskID, "devbox")
			refused(t, name+" rejects alice's token", err)
		}
		if tok, _, err := assistant.Authorize(ctx, task.TaskID, "devbox", nil); err != nil || tok == nil || tok.AccessToken != alices.AccessToken {
			t.Errorf("alice's token after the refused uses: %+v %v", tok, err)
		}
	})
}
