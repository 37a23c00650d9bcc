package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"
)

type testTask = wire.Task[string, string]

const taskID = "task_0faf9mf7jjf1sdfdxx53541x1vcd"

func waiting(label string, reqs ...wire.InputRequest) testTask {
	return testTask{TaskID: taskID, Owner: "agent", Requester: "alice", Status: wire.StatusInputRequired,
		Label: label, InputRequests: reqs}
}

var (
	confirm = wire.InputRequest{RequestID: "deploy", Kind: wire.KindAsk, Prompt: "Deploy to *staging*?",
		Display: wire.DisplayConfirmation, Options: []wire.Option{
			{ID: "yes", Label: "Yes", Style: "primary"}, {ID: "no", Label: "No", Style: "default"}}}
	pick = wire.InputRequest{RequestID: "env", Kind: wire.KindAsk, Prompt: "Which database?",
		Display: wire.DisplaySelect, Options: []wire.Option{
			{ID: "keep", Label: "Keep it", Style: "primary"}, {ID: "drop", Label: "Drop it", Style: "danger"},
			{ID: "later", Label: "Ask me later"}}}
	freeText = wire.InputRequest{RequestID: "why", Kind: wire.KindAsk, Prompt: "Why did it fail?",
		Display: wire.DisplayText}
	signin = wire.InputRequest{RequestID: "req_signin", Kind: wire.KindAuthorization, Connection: "devbox",
		Prompt: "Sign in to devbox so the task can go on", ExpiresAt: "2026-12-01T14:27:20.991Z",
		AuthorizationURL: "https://provider.example/authorize?client_id=c&redirect_uri=https%3A%2F%2Ftaskhook.example%2Fv1" +
			"%2Fconnections%2Fdevbox%2Fcallback%2Fsgn_x&state=sgn_x"}
)

// signinText is the section of the sign-in request above.
const signinText = "Sign in to devbox so the task can go on\nThe link works once, until " +
	"<!date^1796135240^{date_short_pretty} at {time}|2026-12-01 14:27 UTC>."

// withURL is the sign-in request above with another authorizationUrl.
func withURL(u string) wire.InputRequest {
	r := signin
	r.AuthorizationURL = u
	return r
}

// wantSigninButton is the Sign in button of the request above: a link.
func wantSigninButton() string {
	return `{"type":"button","action_id":"signin:req_signin","text":{"type":"plain_text","text":"Sign in"},` +
		`"url":` + jsonString(signin.AuthorizationURL) + `,"style":"primary"}`
}

type renderCase struct {
	name  string
	task  testTask
	asked []wire.InputRequest
	want  string
}

// answerAt is when the rendered tasks' answers were given, as Slack's date
// token shows it.
const (
	answerAt = "2023-11-14T22:13:20.000Z"
	shownAt  = "<!date^1700000000^{date_short_pretty} {time}|2023-11-14 22:13 UTC>"
)

// answer is an answer as a task records it, given by by through via.
func answer(a wire.Answer, by, slackUser, via string) wire.InputResponse[string] {
	return wire.InputResponse[string]{Answer: a, AnsweredBy: by, SlackUserID: slackUser, AnsweredAt: answerAt, Via: via}
}

func answeredWith(r ...wire.InputResponse[string]) testTask {
	return testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusWorking, Kind: "devbox", InputResponses: r}
}

func renderCases() []renderCase {
	answered := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusWorking, Kind: "devbox",
		StatusMessage: "deploying", InputResponses: []wire.InputResponse[string]{
			answer(wire.Answer{RequestID: "deploy", OptionID: "yes"}, "alice", "U0ALICE", wire.ViaSlack)}}
	completed := answered
	completed.Status, completed.Label = wire.StatusCompleted, ""
	completed.Kind = ""
	failed := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusFailed, Label: "devbox",
		Error: &wire.TaskError{Message: "disk <full> & gone"}, InputResponses: []wire.InputResponse[string]{}}
	cancelled := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusCancelled, Label: "devbox",
		InputResponses: []wire.InputResponse[string]{answer(wire.Answer{RequestID: "why", Text: "flaky <test>"}, "alice", "", wire.ViaConsole)}}
	bySlack := "Answered by <@U0ALICE> (alice) via Slack at " + shownAt
	confirmButtons := wantActions(wantButton("deploy", "yes", "Yes", "primary"), wantButton("deploy", "no", "No", ""))
	return []renderCase{
		{name: "confirmation", task: waiting("devbox", confirm), want: wantMessage("devbox: Deploy to *staging*?",
			wantHeader("devbox"), wantSection("Deploy to *staging*?"), confirmButtons)},
		{name: "select with styles", task: waiting("", pick), want: wantMessage("Task: Which database?",
			wantHeader("Task"), wantSection("Which database?"),
			wantActions(wantButton("env", "keep", "Keep it", "primary"), wantButton("env", "drop", "Drop it", "danger"),
				wantButton("env", "later", "Ask me later", "")))},
		{name: "free text", task: waiting("ci", freeText), want: wantMessage("ci: Why did it fail?",
			wantHeader("ci"), wantSection("Why did it fail?"), wantTextInput("why"))},
		{name: "several open", task: waiting("devbox", confirm,
			wire.InputRequest{RequestID: "note", Kind: wire.KindAsk, Prompt: "Anything else?", Display: wire.DisplaySelect,
				AllowFreeform: true, Options: []wire.Option{{ID: "none", Label: "Nothing"}}}),
			want: wantMessage("devbox: Deploy to *staging*? (and 1 more)",
				wantHeader("devbox"), wantSection("Deploy to *staging*?"), confirmButtons,
				wantSection("Anything else?"), wantActions(wantButton("note", "none", "Nothing", "")), wantTextInput("note"))},
		{name: "sign-in", task: waiting("devbox", signin), want: wantMessage(
			"devbox: Sign in to devbox so the task can go on",
			wantHeader("devbox"), wantSection(signinText), wantActions(wantSigninButton()))},
		{name: "sign-in beside a question", task: waiting("devbox", confirm, signin), want: wantMessage(
			"devbox: Deploy to *staging*? (and 1 more)",
			wantHeader("devbox"), wantSection("Deploy to *staging*?"), confirmButtons,
			wantSection(signinText), wantActions(wantSigninButton()))},
		{name: "sign-in, a link Slack refuses", task: waiting("devbox", withURL("javascript:alert(1)"),
			withURL("https://provider.example/authorize?state="+strings.Repeat("x", MaxButtonURL))), want: wantMessage(
			"devbox: Sign in to devbox so the task can go on (and 1 more)",
			wantHeader("devbox"), wantSection(signinText), wantSection(signinText))},
		{name: "signed in", task: testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusWorking, Label: "devbox",
			InputResponses: []wire.InputResponse[string]{{Answer: wire.Answer{RequestID: "req_signin", OptionID: "authorized"}}}},
			asked: []wire.InputRequest{signin}, want: wantMessage("devbox: alice signed in to devbox",
				wantHeader("devbox"), wantSection("alice signed in to devbox"))},
		{name: "sign-in declined, then expired", task: testTask{TaskID: taskID, Requester: "<b>", Status: wire.StatusWorking,
			Label: "devbox", InputResponses: []wire.InputResponse[string]{{Answer: wire.Answer{RequestID: "req_signin", OptionID: "declined"}},
				{Answer: wire.Answer{RequestID: "req_again", OptionID: "expired"}}, {Answer: wire.Answer{RequestID: "req_third", OptionID: "failed"}}}},
			asked: []wire.InputRequest{signin, {RequestID: "req_again", Kind: wire.KindAuthorization, Connection: "devbox"},
				{RequestID: "req_third", Kind: wire.KindAuthorization, Connection: "devbox"}},
			want: wantMessage("devbox: The sign-in to devbox did not complete", wantHeader("devbox"),
				wantSection("&lt;b&gt; declined to sign in to devbox\nThe sign-in link for devbox expired\n"+
					"The sign-in to devbox did not complete"))},
		{name: "answered, label known", task: answered, asked: []wire.InputRequest{confirm}, want: wantMessage(
			"devbox: "+bySlack+": Yes", wantHeader("devbox"), wantSection(bySlack+": Yes"))},
		{name: "answered, label unknown", task: answered, want: wantMessage(
			"devbox: "+bySlack+": yes", wantHeader("devbox"), wantSection(bySlack+": yes"))},
		{name: "completed", task: completed, asked: []wire.InputRequest{confirm}, want: wantMessage(
			"Task: Completed", wantHeader("Task"), wantSection(bySlack+": Yes"), wantSection("Completed"))},
		{name: "answered through an answer link, then declined in the console", task: answeredWith(
			answer(wire.Answer{RequestID: "deploy", OptionID: "no"}, wire.AnsweredByAnswerLink, "", wire.ViaAnswerLink),
			answer(wire.Answer{RequestID: "env", Action: wire.ActionDecline}, "bob <b>", "", wire.ViaConsole)),
			asked: []wire.InputRequest{confirm, pick}, want: wantMessage(
				"devbox: Declined by bob &lt;b&gt; via console at "+shownAt, wantHeader("devbox"),
				wantSection("Answered via answer link at "+shownAt+": No\nDeclined by bob &lt;b&gt; via console at "+shownAt))},
		{name: "dismissed through the API, by a Slack id that is no id", task: answeredWith(
			answer(wire.Answer{RequestID: "deploy", Action: wire.ActionCancel}, "alice", "U1> <!channel", wire.ViaAPI)),
			want: wantMessage("devbox: Dismissed by alice via API at "+shownAt, wantHeader("devbox"),
				wantSection("Dismissed by alice via API at "+shownAt))},
		{name: "answered before answers named who", task: answeredWith(
			wire.InputResponse[string]{Answer: wire.Answer{RequestID: "deploy", OptionID: "yes"}}),
			want: wantMessage("devbox: Answered by alice: yes", wantHeader("devbox"), wantSection("Answered by alice: yes"))},
		{name: "failed", task: failed, want: wantMessage("devbox: Failed: disk &lt;full&gt; &amp; gone",
			wantHeader("devbox"), wantSection("Failed: disk &lt;full&gt; &amp; gone"))},
		{name: "cancelled after a typed answer", task: cancelled, want: wantMessage("devbox: Cancelled",
			wantHeader("devbox"), wantSection("Answered by alice via console at "+shownAt+": flaky &lt;test&gt;"), wantSection("Cancelled"))},
		{name: "working, nothing asked", task: testTask{TaskID: taskID, Status: wire.StatusWorking, Kind: "devbox"},
			want: wantMessage("devbox: Working", wantHeader("devbox"), wantSection("Working"))},
		{name: "injection", task: waiting("<!here> box", wire.InputRequest{RequestID: "x", Kind: wire.KindAsk,
			Prompt: "<!channel> open <http://evil.example|the report> & approve", Display: wire.DisplaySelect,
			Options: []wire.Option{{ID: "ok", Label: "<@U999> ok"}}}),
			want: wantMessage("&lt;!here&gt; box: &lt;!channel&gt; open &lt;http://evil.example|the report&gt; &amp; approve",
				wantHeader("<!here> box"),
				wantSection("&lt;!channel&gt; open &lt;http://evil.example|the report&gt; &amp; approve"),
				wantActions(wantButton("x", "ok", "<@U999> ok", "")))},
	}
}

// wantMessage is the expected Block Kit JSON of a message; the want helpers
// below write out its blocks, one kind each.
func wantMessage(text string, blocks ...string) string {
	return `{"blocks":[` + strings.Join(blocks, ",") + `],"text":` + jsonString(text) + `}`
}

func wantHeader(text string) string {
	return `{"type":"header","text":{"type":"plain_text","text":` + jsonString(text) + `}}`
}

func wantSection(mrkdwn string) string {
	return `{"type":"section","text":{"type":"mrkdwn","text":` + jsonString(mrkdwn) + `}}`
}

func wantActions(buttons ...string) string {
	return `{"type":"actions","elements":[` + strings.Join(buttons, ",") + `]}`
}

// wantButton is the button of one option of a request of the task; style ""
// is none.
func wantButton(requestID, optionID, label, style string) string {
	value := `{"taskId":"` + taskID + `","requestId":"` + requestID + `","optionId":"` + optionID + `"}`
	b := `{"type":"button","action_id":` + jsonString("answer:"+requestID+":"+optionID) +
		`,"text":{"type":"plain_text","text":` + jsonString(label) + `},"value":` + jsonString(value)
	if style != "" {
		b += `,"style":` + jsonString(style)
	}
	return b + `}`
}

// wantTextInput is the free-text answer field of a request of the task.
func wantTextInput(requestID string) string {
	return `{"type":"input","block_id":` + jsonString(`{"taskId":"`+taskID+`","requestId":"`+requestID+`"}`) +
		`,"element":{"type":"plain_text_input","action_id":` + jsonString("text:"+requestID) +
		`,"dispatch_action_config":{"trigger_actions_on":["on_enter_pressed"]}}` +
		`,"label":{"type":"plain_text","text":"Your answer"},"dispatch_action":true}`
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRender renders each kind of task and compares the Block Kit JSON.
func TestRender(t *testing.T) {
	for _, c := range renderCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := json.Marshal(Render(c.task, c.asked))
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(c.want), &wantV); err != nil {
				t.Fatalf("the expected JSON: %v", err)
			}
			g, _ := json.Marshal(gotV)
			w, _ := json.Marshal(wantV)
			if string(g) != string(w) {
				t.Errorf("render:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestRenderLimits: text past Block Kit's limits is cut, never refused, and
// a cut never leaves half an entity.
func TestRenderLimits(t *testing.T) {
	var opts []wire.Option
	for i := range 30 {
		opts = append(opts, wire.Option{ID: "o" + string(rune('a'+i%26)) + strings.Repeat("x", i), Label: strings.Repeat("é", 100)})
	}
	long := wire.InputRequest{RequestID: "long", Kind: wire.KindAsk, Prompt: strings.Repeat("a&", 3000), Options: opts}
	var many []wire.InputRequest
	for i := range 40 {
		r := freeText
		r.RequestID = "why" + strings.Repeat("y", i)
		r.Options = []wire.Option{{ID: "skip", Label: "Skip"}}
		many = append(many, r)
	}
	for name, task := range map[string]testTask{
		"long":  waiting(strings.Repeat("ü", 200), long),
		"many":  waiting("box", many...),
		"ended": {TaskID: taskID, Status: wire.StatusFailed, Error: &wire.TaskError{Message: strings.Repeat("<", 5000)}},
	} {
		m := Render(task, nil)
		if n := len(m.Blocks); n > MaxBlocks || n < 2 {
			t.Errorf("%s: %d blocks", name, n)
		}
		if n := utf8.RuneCountInString(m.Text); n > MaxTextChars {
			t.Errorf("%s: text of %d characters", name, n)
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case BlockHeader:
				if n := utf8.RuneCountInString(b.Text.Text); n > MaxHeaderChars {
					t.Errorf("%s: header of %d characters", name, n)
				}
			case BlockSection:
				if n := utf8.RuneCountInString(b.Text.Text); n > MaxSectionChars {
					t.Errorf("%s: section of %d characters", name, n)
				}
				if text := strings.TrimSuffix(b.Text.Text, "…"); strings.Count(text, "&") != strings.Count(text, ";") {
					t.Errorf("%s: a cut split an entity: ...%s", name, text[max(0, len(text)-20):])
				}
			case BlockActions:
				if len(b.Elements) > MaxActionButtons {
					t.Errorf("%s: %d buttons", name, len(b.Elements))
				}
				for _, e := range b.Elements {
					if n := utf8.RuneCountInString(e.Text.Text); n > MaxButtonChars {
						t.Errorf("%s: button of %d characters", name, n)
					}
				}
			}
		}
	}
	m := Render(waiting("box", many...), nil)
	if last := m.Blocks[len(m.Blocks)-1]; !strings.Contains(last.Text.Text, "more requests not shown") {
		t.Errorf("the requests that do not fit are not counted: %+v", last)
	}
}
