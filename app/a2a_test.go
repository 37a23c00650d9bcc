package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// a2aBindings are the two bindings the face serves; every A2A test runs
// over each.
var a2aBindings = []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolJSONRPC}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// a2aClient is a2a-go's client of srv over binding, as who ("" for
// nobody: no token), made from the card the server publishes.
func a2aClient(t *testing.T, srv *apptest.Server, binding a2a.TransportProtocol, who string) *a2aclient.Client {
	t.Helper()
	return a2aClientAt(t, srv.URL, binding, who, false)
}

// a2aClientAt is a2aClient of the server at base; with local, the card's
// interfaces are taken to be at base (a server whose public URL is not
// its address).
func a2aClientAt(t *testing.T, base string, binding a2a.TransportProtocol, who string, local bool) *a2aclient.Client {
	t.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolve the agent card: %v", err)
	}
	if local {
		for _, iface := range card.SupportedInterfaces {
			iface.URL = base + "/a2a"
		}
	}
	token := ""
	if who != "" {
		token = apptest.Token(t, who)
	}
	hc := &http.Client{Transport: bearerTransport{token}}
	cl, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}),
		a2aclient.WithRESTTransport(hc), a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("a2a client: %v", err)
	}
	t.Cleanup(func() { _ = cl.Destroy() })
	return cl
}

// sendTask sends msg and wants a task back.
func sendTask(t *testing.T, cl *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := cl.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage answered %T, want a task", res)
	}
	return task
}

// callMessage is a message that calls skill with args, in contextID ("" for
// a new context), answered at once.
func callMessage(skill, contextID string, args map[string]any) *a2a.SendMessageRequest {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(args))
	msg.ContextID = contextID
	msg.Metadata = map[string]any{"skill": skill}
	return &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
}

// statusText is the text of a status message.
func statusText(st a2a.TaskStatus) string {
	if st.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range st.Message.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// unitQuestion is the question the weather executor asks.
var unitQuestion = client.InputRequest{RequestID: "unit", Prompt: "Which unit?", Options: []client.Choice{
	{ID: "c", Label: "Celsius"}, {ID: "f", Label: "Fahrenheit"}}}

// An A2A client, over either binding, finds the skill on the public card,
// starts a task that answers at once as working in a new context, sees the
// executor's question, answers it with the option's label through a
// blocking message that returns once the task completed, and reads the
// result as an artifact and the answer in the history. A subscription
// opened while the task waited streams the task, the answer's status, the
// result and the completion, then ends.
func TestA2AConversation(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub := srv.Client(t, "a2a-pub")
		publishWeather(t, pub, "*")
		card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if len(card.Skills) != 1 || card.Skills[0].ID != "weather" || len(card.SupportedInterfaces) != 2 ||
			!card.Capabilities.Streaming || card.SecuritySchemes["bearer"] == nil {
			t.Fatalf("the public card: %+v", card)
		}
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				cl := a2aClient(t, srv, binding, "a2a-bob")
				task := sendTask(t, cl, callMessage("weather", "", map[string]any{"city": "Oslo"}))
				if task.Status.State != a2a.TaskStateWorking || task.ContextID == "" || task.ID == "" {
					t.Fatalf("the started task: %+v", task)
				}
				id := string(task.ID)
				if _, err := pub.RequireInput(ctx, id, []client.InputRequest{unitQuestion}); err != nil {
					t.Fatal(err)
				}
				got, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
				if err != nil || got.Status.State != a2a.TaskStateInputRequired || !strings.Contains(statusText(got.Status), "Which unit?") {
					t.Fatalf("the waiting task: %+v, %v", got, err)
				}

				stream, streamErr := subscribe(ctx, cl, task.ID)
				if first, ok := (<-stream).(*a2a.Task); !ok || first.Status.State != a2a.TaskStateInputRequired {
					t.Fatalf("the subscription's first event: %+v", first)
				}

				answered := make(chan *a2a.Task, 1)
				go func() {
					msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("celsius"))
					msg.TaskID = task.ID
					res, err := cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
					if err != nil {
						t.Errorf("the answer: %v", err)
						answered <- nil
						return
					}
					answered <- res.(*a2a.Task)
				}()
				wantAnsweredOverA2A(t, pub, id, "a2a-bob")
				if _, err := pub.Complete(ctx, id, map[string]any{"tempC": 3}); err != nil {
					t.Fatal(err)
				}
				done := <-answered
				if done == nil || done.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("the blocking answer returned %+v", done)
				}

				history := 10
				got, err = cl.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &history})
				if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 {
					t.Fatalf("the completed task: %+v, %v", got, err)
				}
				if data, _ := got.Artifacts[0].Parts[0].Data().(map[string]any); data["tempC"] != 3.0 {
					t.Fatalf("the result artifact: %+v", got.Artifacts[0].Parts[0])
				}
				if len(got.History) != 1 || got.History[0].Role != a2a.MessageRoleUser || got.History[0].Parts[0].Text() != "c" {
					t.Fatalf("the history: %+v", got.History)
				}

				s := drain(t, "the subscription", stream, streamErr)
				if len(s.others) != 0 {
					t.Fatalf("the subscription sent %T", s.others[0])
				}
				s.wantRanToCompletion(t, "the subscription")
			})
		}
	})
}

// wantAnsweredOverA2A waits for the task id to be working again, then
// fails the test unless its executor pub sees the one answer, option "c",
// given over A2A by the principal by.
func wantAnsweredOverA2A(t *testing.T, pub *client.Client, id, by string) {
	t.Helper()
	ctx := context.Background()
	storetest.WaitFor(t, "the answer recorded", func() bool {
		ex, err := pub.GetTask(ctx, id)
		return err == nil && ex.Status == "working"
	})
	ex, err := pub.GetTask(ctx, id)
	if err != nil || len(ex.InputResponses) != 1 || ex.InputResponses[0].OptionID != "c" || ex.InputResponses[0].Via != "a2a" ||
		ex.InputResponses[0].AnsweredBy != by {
		t.Fatalf("the executor sees the answer %+v, %v", ex, err)
	}
}

// wantA2AError fails the test unless err is the A2A error want.
func wantA2AError(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// Tasks list by context and state, a page at a time; a live task cancels
// (its executor hears task.terminal) and an ended one is not cancelable;
// to another principal every task is not found on every method; a skill
// nobody published is a clear invalid-params error; and without a token
// nothing is served.
func TestA2AListCancelAndIsolation(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub := srv.Client(t, "a2a-pub")
		recv, _ := publishWeather(t, pub, "a2a-bob")
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				bob, carol := a2aClient(t, srv, binding, "a2a-bob"), a2aClient(t, srv, binding, "a2a-carol")
				first := sendTask(t, bob, callMessage("weather", "", map[string]any{"city": "Oslo"}))
				second := sendTask(t, bob, callMessage("weather", first.ContextID, map[string]any{"city": "Bergen"}))
				third := sendTask(t, bob, callMessage("weather", first.ContextID, map[string]any{"city": "Tromsø"}))
				if second.ContextID != first.ContextID || third.ContextID != first.ContextID {
					t.Fatalf("contexts %s %s %s, want one", first.ContextID, second.ContextID, third.ContextID)
				}
				if _, err := pub.RequireInput(ctx, string(second.ID), []client.InputRequest{unitQuestion}); err != nil {
					t.Fatal(err)
				}

				page, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 2})
				if err != nil || len(page.Tasks) != 2 || page.NextPageToken == "" || page.Tasks[0].ID != third.ID || page.Tasks[1].ID != second.ID {
					t.Fatalf("the first page: %+v, %v", page, err)
				}
				rest, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 2, PageToken: page.NextPageToken})
				if err != nil || len(rest.Tasks) != 1 || rest.NextPageToken != "" || rest.Tasks[0].ID != first.ID {
					t.Fatalf("the last page: %+v, %v", rest, err)
				}
				waiting, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID, Status: a2a.TaskStateInputRequired})
				if err != nil || len(waiting.Tasks) != 1 || waiting.Tasks[0].ID != second.ID {
					t.Fatalf("the waiting tasks: %+v, %v", waiting, err)
				}

				for what, call := range map[string]func(id a2a.TaskID) error{
					"GetTask": func(id a2a.TaskID) error {
						_, err := carol.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
						return err
					},
					"CancelTask": func(id a2a.TaskID) error {
						_, err := carol.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
						return err
					},
					"SendMessage": func(id a2a.TaskID) error {
						msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("c"))
						msg.TaskID = id
						_, err := carol.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
						return err
					},
					"SubscribeToTask": func(id a2a.TaskID) error {
						for _, err := range carol.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
							return err
						}
						return nil
					},
				} {
					wantA2AError(t, "another's task, "+what, call(second.ID), a2a.ErrTaskNotFound)
					wantA2AError(t, "a missing task, "+what, call("task_nosuchtask"), a2a.ErrTaskNotFound)
				}
				theirs, err := carol.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: first.ContextID})
				if err != nil || len(theirs.Tasks) != 0 {
					t.Fatalf("another's context lists %+v, %v", theirs, err)
				}

				cancelled, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: second.ID})
				if err != nil || cancelled.Status.State != a2a.TaskStateCanceled {
					t.Fatalf("cancel: %+v, %v", cancelled, err)
				}
				storetest.WaitFor(t, "the executor hears of the cancel", func() bool {
					for _, d := range recv.Got() {
						var ev struct{ Type, TaskID string }
						if json.Unmarshal(d.Body, &ev) == nil && ev.Type == client.EventTaskTerminal && ev.TaskID == string(second.ID) {
							return true
						}
					}
					return false
				})
				_, err = bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: second.ID})
				wantA2AError(t, "cancel of an ended task", err, a2a.ErrTaskNotCancelable)
				for _, err = range bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: second.ID}) {
					break
				}
				wantA2AError(t, "a subscription to an ended task", err, a2a.ErrUnsupportedOperation)
				msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Celsius"))
				msg.TaskID = second.ID
				_, err = bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
				wantA2AError(t, "a message to an ended task", err, a2a.ErrUnsupportedOperation)

				_, err = bob.SendMessage(ctx, callMessage("nosuchskill", "", map[string]any{"city": "Oslo"}))
				wantA2AError(t, "an unknown skill", err, a2a.ErrInvalidParams)
				if !strings.Contains(err.Error(), "nosuchskill") {
					t.Fatalf("the unknown skill's error does not name it: %v", err)
				}
				_, err = a2aClient(t, srv, binding, "").GetTask(ctx, &a2a.GetTaskRequest{ID: first.ID})
				wantA2AError(t, "no token", err, a2a.ErrUnauthenticated)
			})
		}
	})
}

// Over HTTP+JSON an unknown skill is a 400 in google.rpc.Status form, its
// ErrorInfo reason INVALID_PARAMS.
func TestA2AUnknownSkillIsA400(t *testing.T) {
	srv := apptest.Embedded(t, notifyConfig())
	body := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"city":"Oslo"}}],"metadata":{"skill":"nosuchskill"}}}`
	status, raw := callAs(t, srv, "a2a-bob", http.MethodPost, "/a2a/message:send", body)
	var got struct {
		Error struct {
			Code    int
			Status  string
			Message string
			Details []struct {
				Type   string `json:"@type"`
				Reason string
			}
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusBadRequest || got.Error.Status != "INVALID_ARGUMENT" || !strings.Contains(got.Error.Message, "nosuchskill") ||
		len(got.Error.Details) == 0 || got.Error.Details[0].Reason != "INVALID_PARAMS" {
		t.Fatalf("an unknown skill: %d %+v", status, got)
	}
}

// Across replicas of one deployment: a task started on A is followed by a
// subscription on B, answered on A, and completed; B streams the answer's
// status, the result and the completion, then ends.
func TestA2AAcrossReplicas(t *testing.T) {
	for _, binding := range a2aBindings {
		t.Run(string(binding), func(t *testing.T) {
			ctx := context.Background()
			replicas := apptest.Replicas(t, 2, notifyConfig())
			a, b := replicas[0], replicas[1]
			pub := a.Client(t, "a2a-pub")
			publishWeather(t, pub, "a2a-bob")
			onA, onB := a2aClient(t, a, binding, "a2a-bob"), a2aClient(t, b, binding, "a2a-bob")
			task := sendTask(t, onA, callMessage("weather", "", map[string]any{"city": "Oslo"}))
			if _, err := pub.RequireInput(ctx, string(task.ID), []client.InputRequest{unitQuestion}); err != nil {
				t.Fatal(err)
			}
			stream, streamErr := subscribe(ctx, onB, task.ID)
			if first, ok := (<-stream).(*a2a.Task); !ok || first.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("B's first event: %+v", first)
			}
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"requestId": "unit", "optionId": "f"}))
			msg.TaskID = task.ID
			answered := sendTask(t, onA, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			if answered.Status.State != a2a.TaskStateWorking {
				t.Fatalf("the answer on A: %+v", answered)
			}
			if _, err := pub.Complete(ctx, string(task.ID), map[string]any{"tempF": 37}); err != nil {
				t.Fatal(err)
			}
			drain(t, "the subscription on B", stream, streamErr).wantRanToCompletion(t, "B")
		})
	}
}

// A streaming message starts the task and streams it until it needs
// input; the answer, streamed too, runs to the end.
func TestA2AStreamingMessage(t *testing.T) {
	srv := apptest.Embedded(t, notifyConfig())
	ctx := context.Background()
	pub := srv.Client(t, "a2a-pub")
	publishWeather(t, pub, "a2a-bob")
	for _, binding := range a2aBindings {
		t.Run(string(binding), func(t *testing.T) {
			cl := a2aClient(t, srv, binding, "a2a-bob")
			// The only tool bob may call is the one called; text alone is {"text": ...}.
			var id a2a.TaskID
			var states []a2a.TaskState
			req := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Oslo"))}
			for ev, err := range cl.SendStreamingMessage(ctx, req) {
				if err != nil {
					// weather wants {"city"}: a text message is refused by its schema.
					wantA2AError(t, "text arguments for a schema that wants a city", err, a2a.ErrInvalidParams)
					break
				}
				t.Fatalf("a refused call streamed %T", ev)
			}
			req = callMessage("weather", "", map[string]any{"city": "Oslo"})
			req.Config = nil
			for ev, err := range cl.SendStreamingMessage(ctx, req) {
				if err != nil {
					t.Fatalf("the stream: %v", err)
				}
				switch ev := ev.(type) {
				case *a2a.Task:
					id = ev.ID
					if _, err := pub.RequireInput(ctx, string(id), []client.InputRequest{unitQuestion}); err != nil {
						t.Fatal(err)
					}
				case *a2a.TaskStatusUpdateEvent:
					states = append(states, ev.Status.State)
				}
			}
			if id == "" || !slices.Equal(states, []a2a.TaskState{a2a.TaskStateInputRequired}) {
				t.Fatalf("the first stream: task %q, states %v", id, states)
			}
			states = nil
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("c"))
			msg.TaskID = id
			for ev, err := range cl.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
				if err != nil {
					t.Fatalf("the answer's stream: %v", err)
				}
				switch ev := ev.(type) {
				case *a2a.Task:
					if ev.Status.State != a2a.TaskStateWorking {
						t.Fatalf("the answered task: %+v", ev)
					}
					if _, err := pub.Complete(ctx, string(id), map[string]any{"tempC": 3}); err != nil {
						t.Fatal(err)
					}
				case *a2a.TaskStatusUpdateEvent:
					states = append(states, ev.Status.State)
				}
			}
			if !slices.Equal(states, []a2a.TaskState{a2a.TaskStateCompleted}) {
				t.Fatalf("the answer's stream: states %v", states)
			}
		})
	}
}

// A replica killed while it holds a subscription: the client subscribes
// again on another replica and misses nothing. The resubscription's task
// shows what happened while the client was away (the answer given, the
// executor's progress), and its stream goes on with every later change.
func TestA2AResubscribeAfterAKill(t *testing.T) {
	for _, binding := range a2aBindings {
		t.Run(string(binding), func(t *testing.T) {
			ctx := context.Background()
			sc := storetest.Standalone(t)
			b := apptest.Start(t, sc, notifyConfig())
			cmd, killedURL := apptest.StartProcess(t, sc, "TASKHOOK_ALLOW_PRIVATE_TARGETS=true")
			pub := b.Client(t, "a2a-pub")
			publishWeather(t, pub, "a2a-bob")
			onKilled, onB := a2aClientAt(t, killedURL, binding, "a2a-bob", true), a2aClient(t, b, binding, "a2a-bob")
			task := sendTask(t, onKilled, callMessage("weather", "", map[string]any{"city": "Oslo"}))
			if _, err := pub.RequireInput(ctx, string(task.ID), []client.InputRequest{unitQuestion}); err != nil {
				t.Fatal(err)
			}

			held, _ := subscribe(ctx, onKilled, task.ID) // its error is the replica dying under it
			if first, ok := (<-held).(*a2a.Task); !ok || first.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("the held subscription's first event: %+v", first)
			}
			storetest.WaitFor(t, "the killed replica to hold the subscription", func() bool { return gauge(t, killedURL, "taskhook_waiters") == 1 })
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			for ev := range held {
				t.Fatalf("the killed replica streamed %T after the question", ev)
			}

			// Meanwhile the question is answered and the executor goes on.
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Fahrenheit"))
			msg.TaskID = task.ID
			if answered := sendTask(t, onB, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); answered.Status.State != a2a.TaskStateWorking {
				t.Fatalf("the answer on B: %+v", answered)
			}
			halfway := "halfway there"
			if _, err := pub.Progress(ctx, string(task.ID), client.ProgressInput{StatusMessage: &halfway}); err != nil {
				t.Fatal(err)
			}

			again, againErr := subscribe(ctx, onB, task.ID)
			first, ok := (<-again).(*a2a.Task)
			if !ok || first.Status.State != a2a.TaskStateWorking || statusText(first.Status) != halfway {
				t.Fatalf("the resubscription's task: %+v", first)
			}
			if _, err := pub.Message(ctx, string(task.ID), "almost done", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := pub.Complete(ctx, string(task.ID), map[string]any{"tempF": 37}); err != nil {
				t.Fatal(err)
			}
			s := drain(t, "the resubscription", again, againErr)
			if len(s.others) != 0 {
				t.Fatalf("the resubscription sent %T", s.others[0])
			}
			for _, art := range s.artifacts {
				if data, _ := art.Parts[0].Data().(map[string]any); data["tempF"] != 37.0 {
					t.Fatalf("the result artifact: %+v", art.Parts[0])
				}
			}
			if !s.ranToCompletion() || s.said[0] != "almost done" {
				t.Fatalf("the resubscription streamed states %v saying %q and %d artifacts", s.states, s.said, len(s.artifacts))
			}
			history := 10
			got, err := onB.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &history})
			if err != nil || !slices.ContainsFunc(got.History, func(m *a2a.Message) bool {
				return m.Role == a2a.MessageRoleUser && len(m.Parts) > 0 && m.Parts[0].Text() == "f"
			}) {
				t.Fatalf("the answer given while away is not in the history: %+v, %v", got, err)
			}
		})
	}
}

// A sign-in the executor asks for shows as AUTH_REQUIRED with the sign-in
// link in the status message; once the person signs in at the provider
// the task works again, the executor gets its token and the task runs to
// the end, a subscription seeing each step.
func TestA2ASignIn(t *testing.T) {
	eachSignin(t, "path", notifyConfig(), func(t *testing.T, e *signinEnv) {
		ctx := context.Background()
		pub := e.srv.Client(t, "a2a-pub")
		publishWeather(t, pub, "*")
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				// A caller of its own per binding: a sign-in is the caller's.
				who := map[a2a.TransportProtocol]string{a2a.TransportProtocolHTTPJSON: "a2a-signin-rest", a2a.TransportProtocolJSONRPC: "a2a-signin-rpc"}[binding]
				cl := a2aClient(t, e.srv, binding, who)
				task := sendTask(t, cl, callMessage("weather", "", map[string]any{"city": "Oslo"}))
				id := string(task.ID)
				tok, pending, err := pub.Authorize(ctx, id, "devbox", nil)
				if err != nil || tok != nil || pending == nil || pending.AuthorizationURL == "" {
					t.Fatalf("the executor's sign-in question: %+v %+v %v", tok, pending, err)
				}
				got, err := cl.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
				if err != nil || got.Status.State != a2a.TaskStateAuthRequired || !strings.Contains(statusText(got.Status), pending.AuthorizationURL) {
					t.Fatalf("the task waiting for a sign-in: %+v, %v", got, err)
				}
				listed, err := cl.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID, Status: a2a.TaskStateAuthRequired})
				if err != nil || len(listed.Tasks) != 1 || listed.Tasks[0].Status.State != a2a.TaskStateAuthRequired {
					t.Fatalf("the tasks waiting for a sign-in: %+v, %v", listed, err)
				}

				stream, streamErr := subscribe(ctx, cl, task.ID)
				if first, ok := (<-stream).(*a2a.Task); !ok || first.Status.State != a2a.TaskStateAuthRequired {
					t.Fatalf("the subscription's first event: %+v", first)
				}

				if status, loc := e.visit(t, e.prov.Approve(t, pending.AuthorizationURL)); status != http.StatusSeeOther || !strings.Contains(loc, "outcome=authorized") {
					t.Fatalf("the sign-in's callback: %d %q", status, loc)
				}
				tok, pending, err = pub.Authorize(ctx, id, "devbox", nil)
				if err != nil || tok == nil || pending != nil || tok.AccessToken == "" {
					t.Fatalf("the executor's token after the sign-in: %+v %+v %v", tok, pending, err)
				}
				if _, err := pub.Complete(ctx, id, map[string]any{"tempC": 3}); err != nil {
					t.Fatal(err)
				}
				drain(t, "the subscription", stream, streamErr).wantRanToCompletion(t, "the subscription")
			})
		}
	})
}

// streamed is what a subscription sent until it ended: the states of its
// status updates and their texts, its artifacts, and any other events.
type streamed struct {
	states    []a2a.TaskState
	said      []string
	artifacts []*a2a.Artifact
	others    []a2a.Event
}

// drain reads a subscription (as subscribe returns it) to its end, or fails
// the test, naming it what, if it ended in an error.
func drain(t *testing.T, what string, events <-chan a2a.Event, errs <-chan error) streamed {
	t.Helper()
	var s streamed
	for ev := range events {
		switch ev := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			s.states = append(s.states, ev.Status.State)
			s.said = append(s.said, statusText(ev.Status))
		case *a2a.TaskArtifactUpdateEvent:
			s.artifacts = append(s.artifacts, ev.Artifact)
		default:
			s.others = append(s.others, ev)
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("%s: %v", what, err)
	default:
	}
	return s
}

// ranToCompletion is whether the task went working, then completed, with
// one artifact.
func (s streamed) ranToCompletion() bool {
	return slices.Equal(s.states, []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateCompleted}) && len(s.artifacts) == 1
}

// wantRanToCompletion fails the test unless the task, streamed to who, ran
// to completion.
func (s streamed) wantRanToCompletion(t *testing.T, who string) {
	t.Helper()
	if !s.ranToCompletion() {
		t.Fatalf("%s streamed states %v and %d artifacts", who, s.states, len(s.artifacts))
	}
}

// subscribe follows task id with SubscribeToTask in the background: its
// events, until the stream ends, and the error that ended it, if one did.
func subscribe(ctx context.Context, cl *a2aclient.Client, id a2a.TaskID) (<-chan a2a.Event, <-chan error) {
	events, errs := make(chan a2a.Event, 16), make(chan error, 1)
	go func() {
		defer close(events)
		for ev, err := range cl.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				errs <- err
				return
			}
			events <- ev
		}
	}()
	return events, errs
}

// pushSigned checks a delivery's Standard Webhooks signature with secret,
// computed here on its own: HMAC-SHA256 of "id.timestamp.body".
func pushSigned(secret string, d receivertest.Delivery) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(d.Header.Get("webhook-id") + "." + d.Header.Get("webhook-timestamp") + "."))
	m.Write(d.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	return slices.Contains(strings.Fields(d.Header.Get("webhook-signature")), want)
}

// A push config on a task is sent each change of the task's status as an
// A2A StreamResponse, with its token and signed; reads show it without
// either; another principal does not see it; deleted, it is gone.
func TestA2APushConfigsDeliverStatusUpdates(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
		if err != nil || !card.Capabilities.PushNotifications {
			t.Fatalf("the public card offers no push configs: %+v %v", card, err)
		}
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				rest := srv.Client(t, "push-owner")
				cl := a2aClient(t, srv, binding, "push-owner")
				_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
				recv := receivertest.New(t, nil)
				const token = "push-token-1"
				created, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: recv.URL, Token: token})
				if err != nil {
					t.Fatal(err)
				}
				if created.ID == "" || created.URL != recv.URL || created.Token != token || created.Auth == nil ||
					!strings.HasPrefix(created.Auth.Credentials, "whsec_") {
					t.Fatalf("the created config: %+v", created)
				}
				got, err := cl.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID})
				if err != nil || got.URL != recv.URL || got.Token != "" || got.Auth != nil {
					t.Fatalf("the config read back: %+v %v", got, err)
				}
				stranger := a2aClient(t, srv, binding, "push-stranger")
				if _, err := stranger.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)}); !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Fatalf("another principal lists the configs: %v", err)
				}

				driveTaskLife(t, rest, task.TaskID)
				log, err := rest.TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, e := range log.Events {
					if slices.Contains([]string{"task.status", "task.message", "task.terminal"}, e.Type) {
						want = append(want, e.ID)
					}
				}
				waitDeliveries(t, recv, len(want))
				var ids []string
				states := map[a2a.TaskState]bool{}
				for _, d := range recv.Got() {
					if d.Header.Get("A2A-Notification-Token") != token || !pushSigned(created.Auth.Credentials, d) {
						t.Fatalf("a delivery without its token or signature: %v", d.Header)
					}
					var sr a2a.StreamResponse
					if err := json.Unmarshal(d.Body, &sr); err != nil {
						t.Fatalf("a delivery is no StreamResponse: %v %s", err, d.Body)
					}
					switch ev := sr.Event.(type) {
					case *a2a.TaskStatusUpdateEvent:
						if string(ev.TaskID) != task.TaskID || ev.ContextID != task.SessionID || ev.Status.State.Terminal() {
							t.Fatalf("a delivery is no live status update of the task: %s", d.Body)
						}
						states[ev.Status.State] = true
					case *a2a.Task:
						// The end comes as the whole task, its result included.
						if string(ev.ID) != task.TaskID || ev.ContextID != task.SessionID || len(ev.Artifacts) != 1 {
							t.Fatalf("the ended task's delivery: %s", d.Body)
						}
						if data, _ := ev.Artifacts[0].Parts[0].Data().(map[string]any); data["ok"] != true {
							t.Fatalf("the ended task's delivery lacks its result: %s", d.Body)
						}
						states[ev.Status.State] = true
					default:
						t.Fatalf("a delivery is neither a status update nor the task: %s", d.Body)
					}
					ids = append(ids, d.ID())
				}
				slices.Sort(ids)
				if !slices.Equal(ids, want) || !states[a2a.TaskStateInputRequired] || !states[a2a.TaskStateCompleted] {
					t.Fatalf("deliveries %v in states %v, want the events %v", ids, states, want)
				}

				if err := cl.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID}); err != nil {
					t.Fatal(err)
				}
				left, err := cl.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)})
				if err != nil || len(left) != 0 {
					t.Fatalf("configs left after the delete: %+v %v", left, err)
				}
				if _, err := cl.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID}); !errors.Is(err, a2a.ErrInvalidParams) {
					t.Fatalf("a deleted config read: %v", err)
				}
			})
		}
	})
}

// A push config whose receiver answers 410 is dead after that call: the
// task's endpoint list says so, and the config is still listed.
func TestA2APushConfigGoneIsDead(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		rest := srv.Client(t, "push-gone")
		cl := a2aClient(t, srv, a2a.TransportProtocolJSONRPC, "push-gone")
		_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
		recv := receivertest.New(t, receivertest.Status(http.StatusGone))
		created, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: recv.URL, Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rest.Message(ctx, task.TaskID, "are you there?", nil); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the config's endpoint dead", func() bool {
			eps, err := rest.TaskEndpoints(ctx, task.TaskID)
			return err == nil && len(eps) == 1 && eps[0].EndpointID == created.ID && eps[0].Status == "dead"
		})
		if n := len(recv.Got()); n != 1 {
			t.Fatalf("the receiver was called %d times, want once", n)
		}
		eps, _ := rest.TaskEndpoints(ctx, task.TaskID)
		if eps[0].Format != "a2a" || eps[0].Secret != "" {
			t.Fatalf("the endpoint as read: %+v", eps[0])
		}
		configs, err := cl.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)})
		if err != nil || len(configs) != 1 || configs[0].ID != created.ID {
			t.Fatalf("the configs: %+v %v", configs, err)
		}
	})
}

// A push config on a private address is refused where private targets are
// not allowed, and so is an authentication scheme other than the signature.
func TestA2APushConfigOnAPrivateAddressIsRefused(t *testing.T) {
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	ctx := context.Background()
	rest := srv.Client(t, "push-guarded")
	_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
	for _, binding := range a2aBindings {
		cl := a2aClient(t, srv, binding, "push-guarded")
		for _, target := range []string{"http://127.0.0.1:9/", "http://10.0.0.1/", "http://169.254.169.254/"} {
			_, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: target})
			if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("%s: %s: %v, want invalid params saying the address is not allowed", binding, target, err)
			}
		}
		_, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: "http://93.184.216.34/",
			Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "x"}})
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "StandardWebhooks") {
			t.Errorf("%s: a bearer config: %v, want invalid params", binding, err)
		}
	}
	if eps, err := rest.TaskEndpoints(ctx, task.TaskID); err != nil || len(eps) != 0 {
		t.Errorf("endpoints kept: %+v %v", eps, err)
	}
}
