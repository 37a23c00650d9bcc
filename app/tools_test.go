package app_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// weatherTool is a tool that takes a city (and optional days), open to
// callers, with its endpoint at url.
func weatherTool(url string, callers ...string) client.PutToolInput {
	return client.PutToolInput{
		Title: "Weather", Description: "Looks up the weather of a city.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string", "minLength": 1},
				"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7},
			},
			"required":             []string{"city"},
			"additionalProperties": false,
		},
		Callers:  callers,
		Endpoint: &client.EndpointRequest{URL: url},
	}
}

// wantCode fails the test unless err is an API error with status and code.
func wantCode(t *testing.T, what string, err error, status int, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Fatalf("%s: %v, want %d %s", what, err, status, code)
	}
	return e
}

func toolNames(t *testing.T, cl *client.Client) []string {
	t.Helper()
	page, err := cl.ListTools(context.Background(), client.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range page.Items {
		names = append(names, tool.Name)
	}
	return names
}

// A tool is its publisher's: published (201) and replaced (200) by it, its
// endpoint and that endpoint's secret shown to it alone, its name refused
// to anybody else (409 tool_name_taken). It exists only for the callers it
// names: anybody else neither lists, reads, calls nor deletes it (404). A
// delete takes it away and leaves the tasks started through it alone.
func TestToolsPublishReplaceListDelete(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub, bob, carol := srv.Client(t, "tool-pub"), srv.Client(t, "tool-bob"), srv.Client(t, "tool-carol")
		recv := receivertest.New(t, nil)

		tool, created, err := pub.PutTool(ctx, "weather", weatherTool(recv.URL, "tool-bob"))
		if err != nil || !created {
			t.Fatalf("publish: created %v, %v", created, err)
		}
		if tool.Executor != "tool-pub" || !slices.Equal(tool.Callers, []string{"tool-bob"}) || tool.Endpoint == nil ||
			tool.Endpoint.Secret == "" || !slices.Equal(tool.Endpoint.Kinds, client.DefaultToolKinds) {
			t.Fatalf("the published tool: %+v", tool)
		}
		again, created, err := pub.PutTool(ctx, "weather", weatherTool(recv.URL, "tool-bob"))
		if err != nil || created || !again.CreatedAt.Equal(tool.CreatedAt) || again.Endpoint == nil || again.Endpoint.Secret == "" {
			t.Fatalf("replace: created %v, %+v, %v", created, again, err)
		}
		if _, _, err := pub.PutTool(ctx, "almanac", weatherTool(recv.URL, client.ToolCallersAll)); err != nil {
			t.Fatal(err)
		}

		_, _, err = carol.PutTool(ctx, "weather", weatherTool(recv.URL))
		wantCode(t, "another principal's name", err, http.StatusConflict, client.CodeToolNameTaken)

		read, err := pub.GetTool(ctx, "weather")
		if err != nil || read.Endpoint == nil || read.Endpoint.Secret != "" || read.Endpoint.EndpointID != again.Endpoint.EndpointID {
			t.Fatalf("the publisher reads %+v, %v", read, err)
		}
		read, err = bob.GetTool(ctx, "weather")
		if err != nil || read.Endpoint != nil || read.Description == "" || len(read.InputSchema) == 0 {
			t.Fatalf("a caller reads %+v, %v", read, err)
		}
		_, err = carol.GetTool(ctx, "weather")
		wantCode(t, "a tool carol may not call", err, http.StatusNotFound, client.CodeNotFound)
		_, err = carol.CallTool(ctx, "weather", client.CallToolInput{Arguments: map[string]any{"city": "Oslo"}})
		wantCode(t, "carol calls it", err, http.StatusNotFound, client.CodeNotFound)

		for who, want := range map[*client.Client][]string{pub: {"almanac", "weather"}, bob: {"almanac", "weather"}, carol: {"almanac"}} {
			if got := toolNames(t, who); !slices.Equal(got, want) {
				t.Errorf("lists %v, want %v", got, want)
			}
		}
		page, err := pub.ListTools(ctx, client.ListToolsParams{Limit: 1})
		if err != nil || len(page.Items) != 1 || page.NextCursor == "" || page.Items[0].Endpoint == nil {
			t.Fatalf("the publisher's first page of one: %+v, %v", page, err)
		}

		ses := apptest.Session(t, ctx, bob)
		task, err := bob.CallTool(ctx, "weather", client.CallToolInput{SessionID: ses.SessionID, Arguments: map[string]any{"city": "Oslo"}})
		if err != nil {
			t.Fatal(err)
		}

		_, err = bob.DeleteTool(ctx, "weather")
		wantCode(t, "a caller deletes it", err, http.StatusNotFound, client.CodeNotFound)
		gone, err := pub.DeleteTool(ctx, "weather")
		if err != nil || gone.Name != "weather" {
			t.Fatalf("delete: %+v, %v", gone, err)
		}
		_, err = bob.GetTool(ctx, "weather")
		wantCode(t, "a deleted tool", err, http.StatusNotFound, client.CodeNotFound)
		_, err = pub.DeleteTool(ctx, "weather")
		wantCode(t, "a second delete", err, http.StatusNotFound, client.CodeNotFound)
		if got := toolNames(t, bob); !slices.Equal(got, []string{"almanac"}) {
			t.Errorf("bob lists %v after the delete", got)
		}
		if still, err := bob.GetTool(ctx, "almanac"); err != nil || still.Name != "almanac" {
			t.Fatalf("the other tool: %+v, %v", still, err)
		}
		if after, err := bob.GetTask(ctx, task.TaskID); err != nil || after.Status != "working" || after.Kind != "weather" {
			t.Fatalf("the task started through the deleted tool: %+v, %v", after, err)
		}
		// The name is free again.
		if _, created, err := carol.PutTool(ctx, "weather", weatherTool(recv.URL)); err != nil || !created {
			t.Fatalf("carol takes the freed name: %v, %v", created, err)
		}
	})
}

// Bad puts and calls are refused before anything is written: a name out
// of the pattern, a schema that is not one, callers mixed with "*", and
// arguments outside the input schema, with a detail naming each field.
func TestToolsRefuseBadInput(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub, bob := srv.Client(t, "tool-pub"), srv.Client(t, "tool-bob")
		recv := receivertest.New(t, nil)

		bad := weatherTool(recv.URL)
		bad.InputSchema = map[string]any{"type": "string"}
		for name, in := range map[string]client.PutToolInput{
			"bad name!":   weatherTool(recv.URL),
			"weather":     bad,
			"weather-two": weatherTool(recv.URL, "*", "tool-bob"),
		} {
			_, _, err := pub.PutTool(ctx, name, in)
			wantCode(t, "put "+name, err, http.StatusBadRequest, client.CodeInvalidRequest)
		}
		if names := toolNames(t, pub); len(names) != 0 {
			t.Fatalf("refused puts left tools: %v", names)
		}

		if _, _, err := pub.PutTool(ctx, "weather", weatherTool(recv.URL, client.ToolCallersAll)); err != nil {
			t.Fatal(err)
		}
		ses := apptest.Session(t, ctx, bob)
		_, err := bob.CallTool(ctx, "weather", client.CallToolInput{
			SessionID: ses.SessionID, Arguments: map[string]any{"days": 9, "units": "C"},
		})
		e := wantCode(t, "arguments outside the schema", err, http.StatusBadRequest, client.CodeInvalidRequest)
		var fields []string
		for _, d := range e.Details {
			fields = append(fields, d.Field)
		}
		slices.Sort(fields)
		if want := []string{"arguments.city", "arguments.days", "arguments.units"}; !slices.Equal(fields, want) {
			t.Fatalf("details name %v, want %v (%+v)", fields, want, e.Details)
		}
		_, err = bob.CallTool(ctx, "weather", client.CallToolInput{SessionID: ses.SessionID})
		wantCode(t, "a call without arguments", err, http.StatusBadRequest, client.CodeInvalidRequest)
		tasks, err := bob.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID})
		if err != nil || len(tasks.Items) != 0 {
			t.Fatalf("refused calls started tasks: %+v, %v", tasks, err)
		}
	})
}

// A call is a task the caller owns, of the tool's kind, with the arguments
// as its input; a repeat with the same Idempotency-Key answers the same
// task, marked replayed.
func TestToolCallIsATask(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub, bob := srv.Client(t, "tool-pub"), srv.Client(t, "tool-bob")
		publishWeather(t, pub, "tool-bob")
		ses := apptest.Session(t, ctx, bob)
		in := client.CallToolInput{SessionID: ses.SessionID, Label: "oslo", Arguments: map[string]any{"city": "Oslo", "days": 2}}
		var first, second client.Response
		task, err := bob.CallTool(ctx, "weather", in, client.WithIdempotencyKey("call-1"), client.WithResponse(&first))
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != http.StatusCreated || task.Owner != "tool-bob" || task.Kind != "weather" || task.Label != "oslo" ||
			task.Status != "working" || task.Revision != 1 || first.Header.Get("Location") != "/v1/tasks/"+task.TaskID {
			t.Fatalf("the call's task: %d %+v", first.Status, task)
		}
		var input map[string]any
		if err := json.Unmarshal(task.Input, &input); err != nil || input["city"] != "Oslo" || input["days"] != 2.0 {
			t.Fatalf("the task's input %s: %v", task.Input, err)
		}
		again, err := bob.CallTool(ctx, "weather", in, client.WithIdempotencyKey("call-1"), client.WithResponse(&second))
		if err != nil || again.TaskID != task.TaskID || !second.Replayed || second.Status != http.StatusCreated {
			t.Fatalf("the repeat: %+v replayed %v, %v", again, second.Replayed, err)
		}
		page, err := bob.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("the session holds %+v, %v; want the one task", page, err)
		}
	})
}

// A call's task is executed by the tool's publisher, who hears of it on
// the tool's endpoint by a signed task.created; without a session id it
// goes to the caller's default session, the same one call after call.
// (This needs tasks.CreateWith whole: the executor role.)
func TestToolCallReachesItsExecutor(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub, bob := srv.Client(t, "tool-pub"), srv.Client(t, "tool-bob")
		recv, tool := publishWeather(t, pub, "tool-bob")
		task, err := bob.CallTool(ctx, "weather", client.CallToolInput{Arguments: map[string]any{"city": "Oslo"}})
		if err != nil {
			t.Fatal(err)
		}
		next, err := bob.CallTool(ctx, "weather", client.CallToolInput{Arguments: map[string]any{"city": "Bergen"}})
		if err != nil || next.SessionID != task.SessionID {
			t.Fatalf("a second call without a session: %+v, %v; want the session %s", next, err, task.SessionID)
		}
		var raw map[string]any
		if err := json.Unmarshal(taskJSON(t, srv, "tool-pub", task.TaskID), &raw); err != nil || raw["executor"] != "tool-pub" || raw["owner"] != "tool-bob" {
			t.Fatalf("the executor reads the task: %v, %v", raw, err)
		}
		storetest.WaitFor(t, "task.created at the tool's endpoint", func() bool { return len(recv.Got()) >= 2 })
		var heard []string
		for _, d := range recv.Got() {
			ev, err := client.VerifyNotification(tool.Endpoint.Secret, d.Header, d.Body)
			if err != nil {
				t.Fatalf("a delivery does not verify with the tool's secret: %v", err)
			}
			if ev.Type != client.EventTaskCreated {
				t.Fatalf("the tool's endpoint heard %s", ev.Type)
			}
			heard = append(heard, ev.TaskID)
		}
		slices.Sort(heard)
		want := []string{task.TaskID, next.TaskID}
		slices.Sort(want)
		if !slices.Equal(heard, want) {
			t.Fatalf("the endpoint heard of %v, want %v", heard, want)
		}
	})
}

// taskJSON reads a task as who, as the server sends it.
func taskJSON(t *testing.T, srv *apptest.Server, who, id string) []byte {
	t.Helper()
	status, raw := callAs(t, srv, who, http.MethodGet, "/v1/tasks/"+id, "")
	var body json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil || status != http.StatusOK {
		t.Fatalf("GET task as %s: %d, %v", who, status, err)
	}
	return body
}

// The tool's endpoint hears a call's whole life, in order: its start, the
// answer to its question and its end; role=executor lists the call's task
// for its executor and for nobody else.
func TestToolEndpointHearsTheTaskLife(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		pub, bob := srv.Client(t, "life-pub"), srv.Client(t, "life-bob")
		recv, tool := publishWeather(t, pub, "life-bob")
		task, err := bob.CallTool(ctx, "weather", client.CallToolInput{Arguments: map[string]any{"city": "Oslo"}})
		if err != nil {
			t.Fatal(err)
		}
		for who, want := range map[*client.Client]int{pub: 1, bob: 0} {
			page, err := who.ListTasks(ctx, client.ListTasksParams{Role: "executor"})
			if err != nil || len(page.Items) != want || (want == 1 && page.Items[0].TaskID != task.TaskID) {
				t.Fatalf("role=executor: %+v %v; want %d tasks", page, err, want)
			}
		}
		if _, err := pub.RequireInput(ctx, task.TaskID, []client.InputRequest{{RequestID: "unit", Kind: "ask", Prompt: "Celsius?",
			Options: []client.Choice{{ID: "c", Label: "Celsius"}, {ID: "f", Label: "Fahrenheit"}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.Respond(ctx, task.TaskID, []client.Answer{{RequestID: "unit", OptionID: "c"}}); err != nil {
			t.Fatal(err)
		}
		// The tool's endpoint is the executor's: the caller neither sees nor
		// removes it, and it takes none of the caller's endpoints.
		if eps, err := bob.TaskEndpoints(ctx, task.TaskID); err != nil || len(eps) != 0 {
			t.Fatalf("the caller lists the task's endpoints as %+v %v, want none", eps, err)
		}
		_, err = bob.RemoveTaskEndpoint(ctx, task.TaskID, tool.Endpoint.EndpointID)
		wantCode(t, "the caller removes the tool's endpoint", err, 404, client.CodeNotFound)
		own := receivertest.New(t, nil)
		for i := range wire.MaxEndpoints {
			if _, err := bob.AddTaskEndpoint(ctx, task.TaskID, client.EndpointRequest{URL: own.URL, Kinds: []string{"task.terminal"}}); err != nil {
				t.Fatalf("the caller's endpoint %d: %v", i+1, err)
			}
		}
		_, err = bob.AddTaskEndpoint(ctx, task.TaskID, client.EndpointRequest{URL: own.URL})
		wantCode(t, "an endpoint past the caller's cap", err, 409, client.CodeTooManyEndpoints)
		if eps, err := bob.TaskEndpoints(ctx, task.TaskID); err != nil || len(eps) != wire.MaxEndpoints ||
			slices.ContainsFunc(eps, func(ep client.Endpoint) bool { return ep.EndpointID == tool.Endpoint.EndpointID }) {
			t.Fatalf("the caller's endpoints: %d %v", len(eps), err)
		}
		if _, err := pub.Complete(ctx, task.TaskID, map[string]any{"temp": 4}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "three deliveries at the tool's endpoint", func() bool { return len(recv.Got()) >= 3 })
		storetest.WaitFor(t, "the end at each of the caller's endpoints", func() bool { return len(own.Got()) == wire.MaxEndpoints })
		// Deliveries may overtake each other; the events' ids (stream ids,
		// ms-seq) give the order they happened in.
		type heardEvent struct {
			ms, seq int64
			typ     string
		}
		var events []heardEvent
		for _, d := range recv.Got() {
			ev, err := client.VerifyNotification(tool.Endpoint.Secret, d.Header, d.Body)
			if err != nil || ev.TaskID != task.TaskID {
				t.Fatalf("a delivery: %+v %v", ev, err)
			}
			var e heardEvent
			if _, err := fmt.Sscanf(ev.MessageID, "%d-%d", &e.ms, &e.seq); err != nil {
				t.Fatalf("an event id: %q", ev.MessageID)
			}
			e.typ = ev.Type
			events = append(events, e)
		}
		slices.SortFunc(events, func(a, b heardEvent) int { return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.seq, b.seq)) })
		var heard []string
		for _, e := range events {
			heard = append(heard, e.typ)
		}
		if !slices.Equal(heard, []string{client.EventTaskCreated, "input.resolved", "task.terminal"}) {
			t.Fatalf("the tool's endpoint heard %v", heard)
		}
		// The task's own reads show the caller no trace of the tool's endpoint.
		if got, err := bob.GetTask(ctx, task.TaskID); err != nil || len(got.Notify) != 0 {
			t.Fatalf("the caller's view of the task: %+v %v", got.Notify, err)
		}
	})
}

// A call on a replica that called the tool a moment ago is one Redis round
// trip, the task's create: the tool is read from the replica's hint, and
// the caller's default session too. A tool deleted through the same replica
// is gone from its calls at once.
func TestToolCallIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	srv := apptest.Standalone(t, notifyConfig())
	ctx := context.Background()
	pub, bob := srv.Client(t, "rt-pub"), srv.Client(t, "rt-bob")
	if _, _, err := pub.PutTool(ctx, "weather", weatherTool(receivertest.New(t, nil).URL, "rt-bob")); err != nil {
		t.Fatal(err)
	}
	call := func() error {
		_, err := bob.CallTool(ctx, "weather", client.CallToolInput{Arguments: map[string]any{"city": "Oslo"}})
		return err
	}
	if err := call(); err != nil { // the first reads the tool and makes the session
		t.Fatal(err)
	}
	before := roundTrips(srv, "requests")
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if got := roundTrips(srv, "requests") - before; got != 1 {
		t.Fatalf("a call on a warm replica made %v round trips, want 1", got)
	}
	if _, err := pub.DeleteTool(ctx, "weather"); err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	if err := call(); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("a call of the tool just deleted through this replica: %v, want not found", err)
	}
}

// publishWeather has pub publish the weather tool for callers, its calls
// sent to a receiver of its own; it returns the receiver and the tool, or
// fails the test.
func publishWeather(t *testing.T, pub *client.Client, callers ...string) (*receivertest.Receiver, *client.Tool) {
	t.Helper()
	recv := receivertest.New(t, nil)
	tool, _, err := pub.PutTool(context.Background(), "weather", weatherTool(recv.URL, callers...))
	if err != nil {
		t.Fatal(err)
	}
	return recv, tool
}
