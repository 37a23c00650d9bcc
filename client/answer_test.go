package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// noAuthTransport counts requests to answer URLs that carry an
// Authorization header: a capability call must send none.
type noAuthTransport struct {
	next    http.RoundTripper
	withJWT atomic.Int64
}

func (n *noAuthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, "/v1/input/") && req.Header.Get("Authorization") != "" {
		n.withJWT.Add(1)
	}
	return n.next.RoundTrip(req)
}

// TestAnswerURL drives a request's answerUrl as a channel would: no JWT, one
// answer per request, the same rules as POST /v1/tasks/{id}/input.
func TestAnswerURL(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		// The owner's token lets it name carol as the requester.
		srv, owner := e.srv, e.alice.WithToken(apptest.TokenActingFor(t, "alice", []string{"carol"}))
		ctx := context.Background()
		tr := &noAuthTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
		t.Cleanup(tr.next.(*http.Transport).CloseIdleConnections)
		// The channel's client holds a token of its own: AnswerInput must not send it.
		channel := client.New("http://unused.invalid", apptest.Token(t, "channel"),
			client.WithHTTPClient(&http.Client{Transport: &checkingTransport{t: t, next: tr}}))

		_, task := apptest.SessionWithTask(t, ctx, owner, client.CreateTaskInput{Requester: "carol"})
		asked, err := owner.RequireInput(ctx, task.TaskID, []client.InputRequest{
			{RequestID: "go", Prompt: "Deploy?"},
			{RequestID: "pick", Prompt: "Which?", Options: []client.Choice{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}},
			{RequestID: "why", Prompt: "Why?", AllowFreeform: true},
			{RequestID: "hold", Prompt: "Hold?", Options: []client.Choice{{ID: "h", Label: "H"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		urls := map[string]string{}
		var tokens []string
		for _, q := range asked.InputRequests {
			if q.Kind == "authorization" {
				if q.AnswerURL != "" {
					t.Errorf("the authorization request has an answerUrl")
				}
				continue
			}
			if !strings.HasPrefix(q.AnswerURL, srv.URL+"/v1/input/ans_") {
				t.Fatalf("answerUrl of %s: %q", q.RequestID, q.AnswerURL)
			}
			urls[q.RequestID] = q.AnswerURL
			tokens = append(tokens, q.AnswerURL[strings.LastIndexByte(q.AnswerURL, '/')+1:])
		}
		if len(urls) != 4 || urls["go"] == urls["pick"] {
			t.Fatalf("answer URLs: %v", urls)
		}

		// A bad option is refused and changes nothing.
		before, err := owner.GetTask(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := channel.AnswerInput(ctx, urls["pick"], "zzz", ""); !client.IsCode(err, client.CodeInvalidRequest) {
			t.Fatalf("bad option: %v", err)
		}
		if _, err := channel.AnswerInput(ctx, urls["pick"], "", "free text"); !client.IsCode(err, client.CodeInvalidRequest) {
			t.Fatalf("text without freeform: %v", err)
		}
		if now, err := owner.GetTask(ctx, task.TaskID); err != nil || now.Revision != before.Revision {
			t.Fatalf("a refused answer changed the task: %v, revision %d → %d", err, before.Revision, now.Revision)
		}

		// An answer moves the task as /input does.
		ans, err := channel.AnswerInput(ctx, urls["pick"], "b", "")
		if err != nil {
			t.Fatal(err)
		}
		if !ans.OK || ans.TaskID != task.TaskID || ans.RequestID != "pick" || ans.Status != client.StatusInputRequired {
			t.Fatalf("answer: %+v", ans)
		}
		after, err := owner.GetTask(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if after.Revision != before.Revision+1 || len(after.InputRequests) != 3 ||
			len(after.InputResponses) != 1 || after.InputResponses[0].OptionID != "b" {
			t.Fatalf("after the answer: revision %d (was %d), %+v", after.Revision, before.Revision, after)
		}
		evs, err := owner.TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if last := evs.Events[len(evs.Events)-1]; last.Type != "input.resolved" || last.Revision != after.Revision {
			t.Fatalf("last event: %s at revision %d", last.Type, last.Revision)
		}

		// The token is spent, even for the same answer.
		if _, err := channel.AnswerInput(ctx, urls["pick"], "b", ""); !client.IsCode(err, client.CodeInputClosed) {
			t.Fatalf("second answer: %v", err)
		}
		// Answered through /input, the URL is closed too.
		if _, err := owner.Respond(ctx, task.TaskID, []client.Answer{{RequestID: "why", Text: "because"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := channel.AnswerInput(ctx, urls["why"], "", "because"); !client.IsCode(err, client.CodeInputClosed) {
			t.Fatalf("answered through /input: %v", err)
		}

		// Unknown and malformed tokens are 404, and the error names no token.
		fake := urls["go"][:len(urls["go"])-4] + "AAAA"
		for _, u := range []string{fake, srv.URL + "/v1/input/ans_short"} {
			_, err := channel.AnswerInput(ctx, u, "yes", "")
			if !client.IsCode(err, client.CodeNotFound) {
				t.Fatalf("unknown token: %v", err)
			}
			if tok := u[strings.LastIndexByte(u, '/')+1:]; strings.Contains(err.Error(), tok) {
				t.Errorf("the error names the token: %v", err)
			}
		}

		// The last answer but one (hold stays open);
		// a replay with the same Idempotency-Key is its first answer.
		var meta client.Response
		ans, err = channel.AnswerInput(ctx, urls["go"], "yes", "", client.WithIdempotencyKey("k1"), client.WithResponse(&meta))
		if err != nil || ans.Status != client.StatusInputRequired || meta.Replayed {
			t.Fatalf("answer go: %+v %v %+v", ans, err, meta)
		}
		again, err := channel.AnswerInput(ctx, urls["go"], "yes", "", client.WithIdempotencyKey("k1"), client.WithResponse(&meta))
		if err != nil || *again != *ans || !meta.Replayed {
			t.Fatalf("replay: %+v %v %+v", again, err, meta)
		}
		if tr.withJWT.Load() != 0 {
			t.Errorf("%d answers carried an Authorization header", tr.withJWT.Load())
		}
		for _, tok := range tokens {
			if strings.Contains(srv.Logs.String(), tok) {
				t.Fatalf("a token is in the server's logs")
			}
		}
	})
}

// TestAnswerURLBackToWorking: answering the last open request through its
// URL moves the task back to working; after the task ends, a request still
// open answers 410.
func TestAnswerURLBackToWorking(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		owner := e.alice
		ctx := context.Background()
		channel := newClient(t, "http://unused.invalid", "")
		ses := apptest.Session(t, ctx, owner)
		ask := func() *client.Task {
			t.Helper()
			task, err := owner.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			if task, err = owner.RequireInput(ctx, task.TaskID, []client.InputRequest{
				{RequestID: "one", Prompt: "One?"}, {RequestID: "two", Prompt: "Two?"}}); err != nil {
				t.Fatal(err)
			}
			return task
		}

		task := ask()
		if _, err := channel.AnswerInput(ctx, task.InputRequests[0].AnswerURL, "yes", ""); err != nil {
			t.Fatal(err)
		}
		ans, err := channel.AnswerInput(ctx, task.InputRequests[1].AnswerURL, "no", "")
		if err != nil || ans.Status != client.StatusWorking {
			t.Fatalf("last answer: %+v %v", ans, err)
		}
		got, err := owner.GetTask(ctx, task.TaskID)
		if err != nil || got.Status != client.StatusWorking || got.Revision != task.Revision+2 || len(got.InputResponses) != 2 {
			t.Fatalf("after both answers: %+v %v", got, err)
		}
		evs, err := owner.TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := len(evs.Events)
		if n < 2 || evs.Events[n-2].Type != "input.resolved" || evs.Events[n-1].Type != "task.status" {
			t.Fatalf("last events: %+v", evs.Events[max(0, n-2):])
		}

		task = ask()
		if _, err := owner.Complete(ctx, task.TaskID, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := channel.AnswerInput(ctx, task.InputRequests[0].AnswerURL, "yes", ""); !client.IsCode(err, client.CodeInputClosed) {
			t.Fatalf("after complete: %v", err)
		}
		task = ask()
		if _, err := owner.Cancel(ctx, task.TaskID, "stop"); err != nil {
			t.Fatal(err)
		}
		if _, err := channel.AnswerInput(ctx, task.InputRequests[1].AnswerURL, "yes", ""); !client.IsCode(err, client.CodeInputClosed) {
			t.Fatalf("after cancel: %v", err)
		}
	})
}

// TestAnswerTokensNotInRedis: answer tokens are made from the server's key
// when a task is shown, never stored. After a task asks (with an idempotency
// key), is read every way a reader reads it and is answered through a URL,
// no Redis key or value under the test's prefix holds a token or an answer
// URL; yet the URL is in every view SPEC names, the same in all, and works.
func TestAnswerTokensNotInRedis(t *testing.T) {
	eachStore(t, app.Config{}, func(t *testing.T, e *env) {
		srv, sc, owner := e.srv, e.srv.Store, e.alice
		ctx := testContext(t)
		channel := newClient(t, "http://unused.invalid", "")
		ses, task := apptest.SessionWithTask(t, ctx, owner, client.CreateTaskInput{})
		asked, err := owner.RequireInput(ctx, task.TaskID, []client.InputRequest{
			{RequestID: "deploy", Prompt: "Deploy?"},
			{RequestID: "why", Prompt: "Why?", AllowFreeform: true},
		}, client.WithIdempotencyKey("ask-1"))
		if err != nil {
			t.Fatal(err)
		}
		urls := map[string]string{}
		for _, q := range asked.InputRequests {
			if q.AnswerURL != "" {
				urls[q.RequestID] = q.AnswerURL
			}
		}
		if len(urls) != 2 || !strings.HasPrefix(urls["deploy"], srv.URL+"/v1/input/ans_") {
			t.Fatalf("answer URLs: %v", urls)
		}
		// sameURLs checks one view of the open requests.
		sameURLs := func(view string, reqs []client.InputRequest, open ...string) {
			t.Helper()
			got := map[string]string{}
			for _, q := range reqs {
				if q.AnswerURL != "" {
					got[q.RequestID] = q.AnswerURL
				}
			}
			if len(got) != len(open) {
				t.Errorf("%s: answer URLs %v, want those of %v", view, got, open)
			}
			for _, id := range open {
				if got[id] != urls[id] {
					t.Errorf("%s: answerUrl of %s is %q, want %q", view, id, got[id], urls[id])
				}
			}
		}
		sameEvents := func(view string, evs []client.Event, open ...string) {
			t.Helper()
			var snapshots, requested int
			for _, e := range evs {
				if e.TaskID != task.TaskID || e.Revision != asked.Revision {
					continue
				}
				switch e.Type {
				case "task.status":
					snap, err := e.Task()
					if err != nil {
						t.Fatal(err)
					}
					sameURLs(view+" task.status data.task", snap.InputRequests, open...)
					snapshots++
				case "input.requested":
					var d struct{ Requests []client.InputRequest }
					if err := json.Unmarshal(e.Data, &d); err != nil {
						t.Fatal(err)
					}
					sameURLs(view+" input.requested data", d.Requests, open...)
					requested++
				}
			}
			if snapshots != 1 || requested != 1 {
				t.Errorf("%s: %d task.status and %d input.requested events of the ask", view, snapshots, requested)
			}
		}

		var meta client.Response
		again, err := owner.RequireInput(ctx, task.TaskID, []client.InputRequest{
			{RequestID: "deploy", Prompt: "Deploy?"},
			{RequestID: "why", Prompt: "Why?", AllowFreeform: true},
		}, client.WithIdempotencyKey("ask-1"), client.WithResponse(&meta))
		if err != nil || !meta.Replayed {
			t.Fatalf("replay: %v, replayed %v", err, meta.Replayed)
		}
		sameURLs("the replayed answer", again.InputRequests, "deploy", "why")
		got, err := owner.GetTask(ctx, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		sameURLs("GET", got.InputRequests, "deploy", "why")
		polled, err := owner.WaitTask(ctx, task.TaskID, task.Revision, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sameURLs("the long-poll", polled.InputRequests, "deploy", "why")
		list, err := owner.ListTasks(ctx, client.ListTasksParams{SessionID: ses.SessionID})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v %+v", err, list)
		}
		sameURLs("the list", list.Items[0].InputRequests, "deploy", "why")
		tevs, err := owner.TaskEvents(ctx, task.TaskID, client.EventsParams{})
		if err != nil {
			t.Fatal(err)
		}
		sameEvents("task log", tevs.Events, "deploy", "why")
		sevs, err := owner.SessionEvents(ctx, ses.SessionID, client.EventsParams{})
		if err != nil {
			t.Fatal(err)
		}
		sameEvents("session log", sevs.Events, "deploy", "why")
		var streamed []client.Event
		sctx, stop := context.WithCancel(ctx)
		for e, err := range srv.Client(t, "alice").StreamTaskEvents(sctx, task.TaskID, "") {
			if err != nil {
				t.Fatal(err)
			}
			streamed = append(streamed, e)
			if e.Type == "input.requested" {
				break
			}
		}
		stop()
		sameEvents("SSE", streamed, "deploy", "why")

		// A second replica of the same deployment shows the same links
		// and takes their answers (the embedded store, with no URL, is
		// this server's own).
		answerVia := srv
		if sc.URL != "" {
			answerVia = apptest.Start(t, sc, withTestDefaults(app.Config{PublicURL: srv.URL}))
			other, err := newClient(t, answerVia.URL, apptest.Token(t, "alice")).GetTask(ctx, task.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			sameURLs("GET on another replica", other.InputRequests, "deploy", "why")
		}
		viaURL := answerVia.URL + strings.TrimPrefix(urls["deploy"], srv.URL)
		if _, err := channel.AnswerInput(ctx, viaURL, "yes", "", client.WithIdempotencyKey("a-1")); err != nil {
			t.Fatalf("answer: %v", err)
		}
		if got, err = owner.GetTask(ctx, task.TaskID); err != nil {
			t.Fatal(err)
		}
		sameURLs("GET after the answer", got.InputRequests, "why")
		if _, err := channel.AnswerInput(ctx, urls["deploy"], "yes", ""); !client.IsCode(err, client.CodeInputClosed) {
			t.Fatalf("second answer: %v", err)
		}

		var tokens []string
		for _, u := range urls {
			tokens = append(tokens, u[strings.LastIndexByte(u, '/')+1:])
		}
		values := srv.Stored(t)
		if len(values) < 8 {
			t.Fatalf("only %d keys under the prefix: %v", len(values), values)
		}
		for key, v := range values {
			for _, tok := range tokens {
				if strings.Contains(key, tok) || strings.Contains(v, tok) || strings.Contains(v, tok[len("ans_")+2:]) {
					t.Errorf("key %s holds an answer token", key)
				}
			}
			if strings.Contains(v, "/v1/input/") || strings.Contains(v, "answerUrl") {
				t.Errorf("key %s holds an answer URL", key)
			}
		}
	})
}
