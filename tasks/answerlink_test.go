package tasks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/tokens"
	"github.com/taskhook/taskhook/waits"
)

var testKey = bytes.Repeat([]byte{7}, MinAnswerKeyBytes)

// An answer token is the same for the same key, task and request, differs
// when any of them does, and has the shape (and the task's partition) of
// every capability token.
func TestAnswerToken(t *testing.T) {
	l := NewAnswerLinks(testKey, "https://th.example")
	other := NewAnswerLinks(bytes.Repeat([]byte{8}, MinAnswerKeyBytes), "https://th.example")
	task, task2 := ids.New(ids.TaskPrefix, 13), ids.New(ids.TaskPrefix, 13)
	tok := l.Token(task, "go")
	if tok != l.Token(task, "go") {
		t.Fatal("the token changes")
	}
	for name, o := range map[string]string{
		"another request": l.Token(task, "stop"), "another task": l.Token(task2, "go"), "another key": other.Token(task, "go"),
		"a shifted boundary": l.Token(task+"g", "o"),
	} {
		if o == tok {
			t.Errorf("%s gives the same token", name)
		}
	}
	if p, ok := tokens.Parse(tok, AnswerTokenPrefix, 16); !ok || p != 13 {
		t.Errorf("ParseToken(%q) = %d, %v; want partition 13", tok, p, ok)
	}
	if got, want := l.URL(task, "go"), "https://th.example/v1/input/"+tok; got != want {
		t.Errorf("URL %q, want %q", got, want)
	}
}

// askingTask is a stored task with an open ask, an authorization request and
// user data that happens to hold the ask marker.
func askingTask(t testing.TB) (Task, []Emitted) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := Task{TaskID: ids.New(ids.TaskPrefix, 3), SessionID: ids.New(ids.SessionPrefix, 3),
		Owner: "o", Executor: "o", Requester: "o", Status: Working, Revision: 1, InputResponses: []InputResponse{},
		Input: json.RawMessage(`{"kind":"ask","html":"<b>&</b>"}`), CreatedAt: events.At(now), LastUpdatedAt: events.At(now)}
	change, err := Apply(task, Command{Kind: CmdRequireInput, Requests: PrepareRequests([]InputRequest{
		{RequestID: "go", Prompt: "Go <now>?"},
	}, ids.NewRequestID)}, now)
	if err != nil {
		t.Fatal(err)
	}
	signIn, err := Apply(change.Task, Command{Kind: CmdRequireAuthorization, Authorization: &InputRequest{
		RequestID: "login", Kind: wire.KindAuthorization, Prompt: "Sign in", Connection: "github"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	return signIn.Task, append(change.Events, signIn.Events...)
}

// A stored task is shown with the link of each open ask and is otherwise
// byte for byte as stored; a task with nothing to link is the stored slice.
func TestAnswerLinksTask(t *testing.T) {
	l := NewAnswerLinks(testKey, "https://th.example")
	task, _ := askingTask(t)
	raw, _ := json.Marshal(task)
	want := task.clone()
	want.InputRequests[0].AnswerURL = l.URL(task.TaskID, "go")
	wantRaw, _ := json.Marshal(want)
	if got := l.Task(raw); !bytes.Equal(got, wantRaw) {
		t.Errorf("shown:\n%s\nwant:\n%s", got, wantRaw)
	}

	plain := task.clone()
	plain.InputRequests = plain.InputRequests[1:] // the authorization request only
	for name, tk := range map[string]Task{
		"no open ask": plain, "no request": {TaskID: task.TaskID, Input: task.Input}, "no marker": {TaskID: task.TaskID},
	} {
		raw, _ := json.Marshal(tk)
		if got := l.Task(raw); &got[0] != &raw[0] {
			t.Errorf("%s: the task was copied: %s", name, got)
		}
	}

	legacy := want.clone()
	legacy.InputRequests[0].AnswerURL = "https://old.example/v1/input/ans_stored"
	raw, _ = json.Marshal(legacy)
	if got := l.Task(raw); !bytes.Equal(got, raw) {
		t.Errorf("a stored link was replaced: %s", got)
	}
}

// Stored events are shown with the links in data.task and in the requests of
// input.requested, and are otherwise as stored.
func TestAnswerLinksEvent(t *testing.T) {
	l := NewAnswerLinks(testKey, "https://th.example")
	task, emitted := askingTask(t)
	snapshot, _ := json.Marshal(task)
	shownTask := task.clone()
	l.ShowTask(&shownTask)
	shownSnapshot, _ := json.Marshal(shownTask)
	now := task.LastUpdatedAt.Time
	for _, e := range emitted {
		stored, err := eventJSON(task, now, e, snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == wire.EventInputRequested {
			e.Data = map[string]any{"requests": shownTask.InputRequests[:1]} // the ask; the sign-in came on its own
		}
		want, err := eventJSON(task, now, e, shownSnapshot)
		if err != nil {
			t.Fatal(err)
		}
		withID := func(b []byte) []byte { return append([]byte(`{"id":"1-0",`), b[1:]...) }
		got := l.Events([]waits.LogEntry{{ID: "1-0", JSON: withID(stored)}})[0].JSON
		if !bytes.Equal(got, withID(want)) {
			t.Errorf("%s shown:\n%s\nwant:\n%s", e.Type, got, withID(want))
		}
		if e.Type == wire.EventAuthorizationRequired {
			continue // no task and no ask in it: shown as stored (checked above)
		}
		if !strings.Contains(string(got), l.URL(task.TaskID, "go")) {
			t.Errorf("%s has no link", e.Type)
		}
	}
	resolved, _ := eventJSON(task, now, Emitted{Type: wire.EventInputResolved,
		Data: map[string]any{"responses": []InputResponse{{Answer: Answer{RequestID: "go", Text: `"kind":"ask"`}, AnsweredBy: "o", Via: wire.ViaAPI}}}}, snapshot)
	if got := l.Event(resolved); !bytes.Equal(got, resolved) {
		t.Errorf("an event with nothing to link changed: %s", got)
	}
}

// The cost of showing a task: nothing for one with no open ask (the common
// case), a decode and an encode for one that asks.
func BenchmarkAnswerLinksTask(b *testing.B) {
	l := NewAnswerLinks(testKey, "https://th.example")
	task, _ := askingTask(b)
	task.Input = json.RawMessage(`{"repo":"acme/api"}`)
	asking, _ := json.Marshal(task)
	task.InputRequests = nil
	working, _ := json.Marshal(task)
	for name, raw := range map[string][]byte{"working": working, "asking": asking} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = l.Task(raw)
			}
		})
	}
}

// A sign-in's authorization URL is stored with a placeholder for its attempt
// token and shown with the token, made from the key, the task and the
// request, in a domain apart from answer tokens; a URL stored whole by an
// older version is shown as it is.
func TestSigninLinks(t *testing.T) {
	l := NewAnswerLinks(testKey, "https://th.example")
	other := NewAnswerLinks(bytes.Repeat([]byte{8}, MinAnswerKeyBytes), "https://th.example")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := Task{TaskID: ids.New(ids.TaskPrefix, 3), SessionID: ids.New(ids.SessionPrefix, 3),
		Owner: "o", Requester: "o", Status: Working, Revision: 1, CreatedAt: events.At(now), LastUpdatedAt: events.At(now)}
	tok := l.SigninToken(task.TaskID, "login")
	if p, ok := tokens.Parse(tok, SigninTokenPrefix, 16); !ok || p != 3 {
		t.Fatalf("Parse(%q) = %d %v, want partition 3", tok, p, ok)
	}
	for name, o := range map[string]string{"an answer token": l.Token(task.TaskID, "login"), "another request": l.SigninToken(task.TaskID, "other"),
		"another key": other.SigninToken(task.TaskID, "login")} {
		if strings.TrimPrefix(o, AnswerTokenPrefix) == strings.TrimPrefix(tok, SigninTokenPrefix) || o == tok {
			t.Errorf("%s is the same token", name)
		}
	}

	stored := "https://provider.example/authorize?redirect_uri=https%3A%2F%2Fth.example%2Fv1%2Fconnections%2Fgh%2Fcallback%2F" +
		SigninPlaceholder + "&state=" + SigninPlaceholder
	shown := strings.ReplaceAll(stored, SigninPlaceholder, tok)
	change, err := Apply(task, Command{Kind: CmdRequireAuthorization, Authorization: &InputRequest{
		RequestID: "login", Kind: wire.KindAuthorization, Prompt: "Sign in", Connection: "gh", AuthorizationURL: stored}}, now)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(change.Task)
	if bytes.Contains(raw, []byte(tok)) {
		t.Fatal("the stored task holds the token")
	}
	var got Task
	if err := json.Unmarshal(l.Task(raw), &got); err != nil || got.InputRequests[0].AuthorizationURL != shown {
		t.Fatalf("shown task: %+v %v", got.InputRequests, err)
	}
	for _, e := range change.Events {
		ev, err := eventJSON(change.Task, now, e, raw)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(ev, []byte(tok)) {
			t.Fatalf("the stored %s event holds the token", e.Type)
		}
		if e.Type == wire.EventAuthorizationRequired {
			var out events.Event
			var data struct{ AuthorizationURL string }
			if json.Unmarshal(l.Event(ev), &out) != nil || json.Unmarshal(out.Data, &data) != nil || data.AuthorizationURL != shown {
				t.Fatalf("shown event: %s", l.Event(ev))
			}
		}
	}
	if legacy := "https://provider.example/authorize?state=sgn_00abc"; l.SigninURL(task.TaskID, "login", legacy) != legacy {
		t.Error("a URL stored whole was changed")
	}
}
