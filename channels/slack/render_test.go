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
)

type renderCase struct {
	name  string
	task  testTask
	asked []wire.InputRequest
	want  string
}

func renderCases() []renderCase {
	answered := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusWorking, Kind: "devbox",
		StatusMessage: "deploying", InputResponses: []wire.InputResponse{{RequestID: "deploy", OptionID: "yes"}}}
	completed := answered
	completed.Status, completed.Label = wire.StatusCompleted, ""
	completed.Kind = ""
	failed := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusFailed, Label: "devbox",
		Error: &wire.TaskError{Message: "disk <full> & gone"}, InputResponses: []wire.InputResponse{}}
	cancelled := testTask{TaskID: taskID, Requester: "alice", Status: wire.StatusCancelled, Label: "devbox",
		InputResponses: []wire.InputResponse{{RequestID: "why", Text: "flaky <test>"}}}
	return []renderCase{
		{name: "confirmation", task: waiting("devbox", confirm), want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Deploy to *staging*?"}},
			{"type":"actions","elements":[
				{"type":"button","action_id":"answer:deploy:yes","text":{"type":"plain_text","text":"Yes"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"deploy\",\"optionId\":\"yes\"}","style":"primary"},
				{"type":"button","action_id":"answer:deploy:no","text":{"type":"plain_text","text":"No"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"deploy\",\"optionId\":\"no\"}"}]}],
			"text":"devbox: Deploy to *staging*?"}`},
		{name: "select with styles", task: waiting("", pick), want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"Task"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Which database?"}},
			{"type":"actions","elements":[
				{"type":"button","action_id":"answer:env:keep","text":{"type":"plain_text","text":"Keep it"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"env\",\"optionId\":\"keep\"}","style":"primary"},
				{"type":"button","action_id":"answer:env:drop","text":{"type":"plain_text","text":"Drop it"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"env\",\"optionId\":\"drop\"}","style":"danger"},
				{"type":"button","action_id":"answer:env:later","text":{"type":"plain_text","text":"Ask me later"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"env\",\"optionId\":\"later\"}"}]}],
			"text":"Task: Which database?"}`},
		{name: "free text", task: waiting("ci", freeText), want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"ci"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Why did it fail?"}},
			{"type":"input","block_id":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"why\"}",
			 "element":{"type":"plain_text_input","action_id":"text:why","dispatch_action_config":{"trigger_actions_on":["on_enter_pressed"]}},
			 "label":{"type":"plain_text","text":"Your answer"},"dispatch_action":true}],
			"text":"ci: Why did it fail?"}`},
		{name: "several open", task: waiting("devbox", confirm,
			wire.InputRequest{RequestID: "note", Kind: wire.KindAsk, Prompt: "Anything else?", Display: wire.DisplaySelect,
				AllowFreeform: true, Options: []wire.Option{{ID: "none", Label: "Nothing"}}}), want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Deploy to *staging*?"}},
			{"type":"actions","elements":[
				{"type":"button","action_id":"answer:deploy:yes","text":{"type":"plain_text","text":"Yes"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"deploy\",\"optionId\":\"yes\"}","style":"primary"},
				{"type":"button","action_id":"answer:deploy:no","text":{"type":"plain_text","text":"No"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"deploy\",\"optionId\":\"no\"}"}]},
			{"type":"section","text":{"type":"mrkdwn","text":"Anything else?"}},
			{"type":"actions","elements":[
				{"type":"button","action_id":"answer:note:none","text":{"type":"plain_text","text":"Nothing"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"note\",\"optionId\":\"none\"}"}]},
			{"type":"input","block_id":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"note\"}",
			 "element":{"type":"plain_text_input","action_id":"text:note","dispatch_action_config":{"trigger_actions_on":["on_enter_pressed"]}},
			 "label":{"type":"plain_text","text":"Your answer"},"dispatch_action":true}],
			"text":"devbox: Deploy to *staging*? (and 1 more)"}`},
		{name: "answered, label known", task: answered, asked: []wire.InputRequest{confirm}, want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Answered by alice: Yes"}}],
			"text":"devbox: Answered by alice: Yes"}`},
		{name: "answered, label unknown", task: answered, want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Answered by alice: yes"}}],
			"text":"devbox: Answered by alice: yes"}`},
		{name: "completed", task: completed, asked: []wire.InputRequest{confirm}, want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"Task"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Answered by alice: Yes"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Completed"}}],
			"text":"Task: Completed"}`},
		{name: "failed", task: failed, want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Failed: disk &lt;full&gt; &amp; gone"}}],
			"text":"devbox: Failed: disk &lt;full&gt; &amp; gone"}`},
		{name: "cancelled after a typed answer", task: cancelled, want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Answered by alice: flaky &lt;test&gt;"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Cancelled"}}],
			"text":"devbox: Cancelled"}`},
		{name: "working, nothing asked", task: testTask{TaskID: taskID, Status: wire.StatusWorking, Kind: "devbox"},
			want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"devbox"}},
			{"type":"section","text":{"type":"mrkdwn","text":"Working"}}],
			"text":"devbox: Working"}`},
		{name: "injection", task: waiting("<!here> box", wire.InputRequest{RequestID: "x", Kind: wire.KindAsk,
			Prompt: "<!channel> open <http://evil.example|the report> & approve", Display: wire.DisplaySelect,
			Options: []wire.Option{{ID: "ok", Label: "<@U999> ok"}}}), want: `{"blocks":[
			{"type":"header","text":{"type":"plain_text","text":"<!here> box"}},
			{"type":"section","text":{"type":"mrkdwn","text":"&lt;!channel&gt; open &lt;http://evil.example|the report&gt; &amp; approve"}},
			{"type":"actions","elements":[
				{"type":"button","action_id":"answer:x:ok","text":{"type":"plain_text","text":"<@U999> ok"},
				 "value":"{\"taskId\":\"task_0faf9mf7jjf1sdfdxx53541x1vcd\",\"requestId\":\"x\",\"optionId\":\"ok\"}"}]}],
			"text":"&lt;!here&gt; box: &lt;!channel&gt; open &lt;http://evil.example|the report&gt; &amp; approve"}`},
	}
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
