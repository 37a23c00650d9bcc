package app_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// slackTo is a notify list of one Slack endpoint posting to channel.
func slackTo(channel string) []client.EndpointRequest {
	return []client.EndpointRequest{{Slack: &client.SlackTarget{Channel: channel}}}
}

// refusedField fails the test unless err is the 400 invalid_request whose
// one detail names field.
func refusedField(t *testing.T, what string, err error, field string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 400 || e.Code != client.CodeInvalidRequest ||
		len(e.Details) != 1 || e.Details[0].Field != field {
		t.Fatalf("%s: %v (want 400 invalid_request naming %s)", what, err, field)
	}
}

// TestSlackEndpointsPostOnlyWhereAllowed: the bot posts for a principal only
// into the channels TASKHOOK_SLACK_CHANNELS opens to it, and into the direct
// messages of the requester's own mapped Slack user. Any other channel is
// refused when the endpoint is registered (session create, task create,
// POST .../notify), with nothing written.
func TestSlackEndpointsPostOnlyWhereAllowed(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		fake := newFakeSlack(t)
		srv := apptest.Start(t, sc, app.Config{
			SlackBotToken: slackToken, SlackAPIURL: fake.URL + "/api/",
			SlackChannels: "C0OPS=agent|alice, C0HR=carol", SlackUsers: "U0ALICE=alice,U0BOB=bob",
		})
		ctx := context.Background()
		agent, alice, mallory := srv.ClientActingFor(t, "agent", []string{"alice", "bob"}), srv.Client(t, "alice"), srv.Client(t, "mallory")

		// Session create: the channel must be open to the owner, a direct
		// message the owner's own.
		for _, ch := range []string{"C0OPS", "C0HR", "C0ELSEWHERE", "#general", "U0BOB"} {
			_, err := mallory.CreateSession(ctx, client.CreateSessionInput{Notify: slackTo(ch)})
			refusedField(t, "mallory's session to "+ch, err, "notify[0].slack.channel")
		}
		_, err := alice.CreateSession(ctx, client.CreateSessionInput{Notify: append(slackTo("U0ALICE"), slackTo("U0BOB")...)})
		refusedField(t, "alice's session to bob", err, "notify[1].slack.channel")
		if page, err := mallory.ListSessions(ctx, client.ListSessionsParams{}); err != nil || len(page.Items) != 0 {
			t.Fatalf("refused creates wrote sessions: %+v %v", page, err)
		}
		ses, err := agent.CreateSession(ctx, client.CreateSessionInput{Notify: slackTo("C0OPS")})
		if err != nil {
			t.Fatalf("a channel open to the owner: %v", err)
		}
		own, err := alice.CreateSession(ctx, client.CreateSessionInput{Notify: slackTo("U0ALICE")})
		if err != nil {
			t.Fatalf("the owner's own direct messages: %v", err)
		}

		// Task create: a direct message goes to the requester's own user.
		for _, in := range []client.CreateTaskInput{
			{SessionID: ses.SessionID, Notify: slackTo("C0HR")},
			{SessionID: ses.SessionID, Requester: "bob", Notify: slackTo("U0ALICE")},
			{SessionID: ses.SessionID, Notify: slackTo("U0ALICE")}, // the requester is the agent, which has no user
		} {
			_, err := agent.CreateTask(ctx, in)
			refusedField(t, "a task to "+in.Notify[0].Slack.Channel, err, "notify[0].slack.channel")
		}
		if page, err := agent.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID}); err != nil || len(page.Items) != 0 {
			t.Fatalf("refused creates wrote tasks: %+v %v", page, err)
		}
		task, err := agent.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "deploy", Requester: "alice", Notify: slackTo("U0ALICE")})
		if err != nil {
			t.Fatalf("a direct message to the requester's own user: %v", err)
		}

		// POST .../notify: the same rules, the requester read from the task
		// (or the session's owner).
		for _, c := range []struct {
			what string
			add  func() (*client.Endpoint, error)
		}{
			{"bob's user on alice's task", func() (*client.Endpoint, error) {
				return agent.AddTaskEndpoint(ctx, task.TaskID, slackTo("U0BOB")[0])
			}},
			{"a channel not open to the agent", func() (*client.Endpoint, error) {
				return agent.AddTaskEndpoint(ctx, task.TaskID, slackTo("C0HR")[0])
			}},
			{"the requester's user on the agent's session", func() (*client.Endpoint, error) {
				return agent.AddSessionEndpoint(ctx, ses.SessionID, slackTo("U0ALICE")[0])
			}},
			{"bob's user on alice's session", func() (*client.Endpoint, error) {
				return alice.AddSessionEndpoint(ctx, own.SessionID, slackTo("U0BOB")[0])
			}},
		} {
			_, err := c.add()
			refusedField(t, c.what, err, "notify.slack.channel")
		}
		if _, err := mallory.AddTaskEndpoint(ctx, task.TaskID, slackTo("U0MALLORY")[0]); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("somebody else's task: %v", err)
		}
		taskEps, err := agent.TaskEndpoints(ctx, task.TaskID)
		if err != nil || len(taskEps) != 1 {
			t.Fatalf("refused adds wrote endpoints: %+v %v", taskEps, err)
		}
		if sesEps, err := agent.SessionEndpoints(ctx, ses.SessionID); err != nil || len(sesEps) != 1 {
			t.Fatalf("refused adds wrote endpoints: %+v %v", sesEps, err)
		}
		if _, err := agent.AddTaskEndpoint(ctx, task.TaskID, slackTo("C0OPS")[0]); err != nil {
			t.Fatalf("a channel open to the agent: %v", err)
		}
		if _, err := alice.AddSessionEndpoint(ctx, own.SessionID, client.EndpointRequest{Slack: &client.SlackTarget{Channel: "U0ALICE"}}); err != nil {
			t.Fatalf("alice's own user on her session: %v", err)
		}

		// The question reaches the places allowed: alice's direct messages
		// (the task's endpoint) and the ops channel (the task's and the
		// session's).
		if _, err := agent.RequireInput(ctx, task.TaskID, []client.InputRequest{{Prompt: "Ship it?", Display: client.DisplayConfirmation}}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the question posted", func() bool {
			var to []string
			for _, c := range fake.snapshot() {
				if c.Method == "/api/chat.postMessage" {
					to = append(to, c.Channel)
				}
			}
			slices.Sort(to)
			return slices.Equal(to, []string{"C0OPS", "C0OPS", "U0ALICE"})
		})
	})
}
