package tasks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/tasks"
)

// now has nanoseconds and a zone on purpose: lastUpdatedAt must come out as
// UTC milliseconds.
var now = time.Date(2025, time.March, 14, 15, 9, 26, 535_897_932, time.FixedZone("CET", 3600))

var (
	createdAt = events.At(time.Date(2025, time.March, 14, 9, 0, 0, 0, time.UTC))
	updatedAt = events.At(time.Date(2025, time.March, 14, 14, 0, 0, 0, time.UTC))
)

// Requests and answers the fixtures share. "done1" and "done2" were answered
// earlier in every fixture task; "pick", "name" and "note" are the open ones
// of an input_required task; "go" is the one the require_input cells add.
var (
	done1 = tasks.Answer{RequestID: "done1", OptionID: "yes"}
	done2 = tasks.Answer{RequestID: "done2", Text: "main"}
)

// answerer is who answers in the respond cells; the fixture's earlier
// answers came from someone else, through another channel, at updatedAt.
var (
	answerer = tasks.Answerer{By: "user:alice", Via: wire.ViaConsole}
	earlier  = tasks.Answerer{By: "user:alice", SlackUserID: "U0ALICE", Via: wire.ViaSlack}
)

// recorded is an answer as the fixture task holds it.
func recorded(a tasks.Answer) tasks.InputResponse {
	return tasks.InputResponse{Answer: a, AnsweredBy: earlier.By, SlackUserID: earlier.SlackUserID,
		AnsweredAt: updatedAt, Via: earlier.Via}
}

func yesNo() []tasks.Option {
	return []tasks.Option{
		{ID: "yes", Label: "Yes", Style: "primary"},
		{ID: "no", Label: "No", Style: "default"},
	}
}

// reqPick takes one of its options and no text.
func reqPick() tasks.InputRequest {
	return tasks.InputRequest{
		RequestID: "pick", Kind: wire.KindAsk, Prompt: "Which region?", Display: wire.DisplaySelect,
		Options: []tasks.Option{{ID: "eu", Label: "EU"}, {ID: "us", Label: "US"}},
	}
}

// reqName takes text because its display is text.
func reqName() tasks.InputRequest {
	return tasks.InputRequest{RequestID: "name", Kind: wire.KindAsk, Prompt: "Branch name?", Display: wire.DisplayText}
}

// reqNote takes an option or text because it allows freeform.
func reqNote() tasks.InputRequest {
	return tasks.InputRequest{
		RequestID: "note", Kind: wire.KindAsk, Prompt: "Anything else?", Display: wire.DisplaySelect,
		Options: []tasks.Option{{ID: "nothing", Label: "Nothing"}}, AllowFreeform: true,
	}
}

func reqConfirm(id string) tasks.InputRequest {
	return tasks.InputRequest{
		RequestID: id, Kind: wire.KindAsk, Prompt: "Deploy now?", Display: wire.DisplayConfirmation, Options: yesNo(),
	}
}

func taskIn(status tasks.Status) tasks.Task {
	ttl := int64(7 * 24 * time.Hour / time.Millisecond)
	expires := events.At(createdAt.Add(7 * 24 * time.Hour))
	return tasks.Task{
		TaskID: "task_1", SessionID: "ses_1", Owner: "svc:runner", Requester: "user:alice",
		Status: status, Revision: 7, Kind: "devbox", Label: "build",
		Input:          json.RawMessage(`{"repo":"taskhook"}`),
		Metadata:       json.RawMessage(`{"team":"infra"}`),
		StatusMessage:  "cloning",
		Progress:       json.RawMessage(`{"pct":10}`),
		InputResponses: []tasks.InputResponse{recorded(done1), recorded(done2)},
		CreatedAt:      createdAt, LastUpdatedAt: updatedAt,
		TTLMs: &ttl, ExpiresAt: &expires, PollIntervalMs: 2000,
	}
}

func workingTask() tasks.Task { return taskIn(tasks.Working) }

// waitingTask is input_required with the given open requests (pick and name
// when none are given).
func waitingTask(open ...tasks.InputRequest) tasks.Task {
	if len(open) == 0 {
		open = []tasks.InputRequest{reqPick(), reqName()}
	}
	t := taskIn(tasks.InputRequired)
	t.InputRequests = open
	return t
}

func completedTask() tasks.Task {
	t := taskIn(tasks.Completed)
	t.Result = json.RawMessage(`{"url":"https://example.test/devbox"}`)
	return t
}

func failedTask() tasks.Task {
	t := taskIn(tasks.Failed)
	t.Error = &tasks.TaskError{Message: "quota exceeded"}
	t.StatusMessage = "quota exceeded"
	return t
}

func cancelledTask() tasks.Task {
	t := taskIn(tasks.Cancelled)
	t.CancelReason = "no longer needed"
	t.StatusMessage = "no longer needed"
	return t
}

func progressCmd() tasks.Command {
	msg := "halfway"
	return tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg, Progress: json.RawMessage(`{"pct":50}`)}
}

func messageCmd() tasks.Command {
	return tasks.Command{Kind: tasks.CmdMessage, Text: "need a bigger disk", Data: json.RawMessage(`{"gb":100}`)}
}

func requireInputCmd(reqs ...tasks.InputRequest) tasks.Command {
	if len(reqs) == 0 {
		reqs = []tasks.InputRequest{reqConfirm("go")}
	}
	return tasks.Command{Kind: tasks.CmdRequireInput, Requests: reqs}
}

func respondCmd(answers ...tasks.Answer) tasks.Command {
	return tasks.Command{Kind: tasks.CmdRespond, Responses: answers, Answerer: answerer}
}

func openOnly(c tasks.Command) tasks.Command {
	c.OpenOnly = true
	return c
}

func completeCmd() tasks.Command {
	return tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"ok":true}`)}
}

func failCmd() tasks.Command {
	return tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{Message: "disk full", Data: json.RawMessage(`{"free":0}`)}}
}

func cancelCmd() tasks.Command { return tasks.Command{Kind: tasks.CmdCancel, Reason: "superseded"} }

func releaseCmd() tasks.Command { return tasks.Command{Kind: tasks.CmdRelease} }

// released is task as its executor released it, an hour before now.
func released(task tasks.Task) tasks.Task {
	at := events.At(now.Add(-time.Hour))
	task.ReleasedAt = &at
	return task
}

// want is what one Apply must decide. Exactly one of err, invalid or status
// is the outcome; events are the emitted types in order.
type want struct {
	err     error // a sentinel, matched with errors.Is
	invalid bool  // a *problem.ValidationError
	status  tasks.Status
	changed bool
	events  []string
	check   func(t *testing.T, before tasks.Task, got tasks.Change)
}

type applyCase struct {
	name string
	task tasks.Task
	cmd  tasks.Command
	want want
}

var sentinels = []error{problem.ErrNotFound, tasks.ErrTerminal, tasks.ErrNotInputRequired, tasks.ErrUnknownRequest,
	tasks.ErrInputConflict, tasks.ErrInputClosed, tasks.ErrNotTerminal}

func refused(err error) want { return want{err: err} }

var invalid = want{invalid: true}

func unchanged(status tasks.Status) want { return want{status: status} }

// ended is the want of a command that ends the task: status, the one
// task.terminal event and the terminal fields checked.
func ended(status tasks.Status) want {
	return want{status: status, changed: true, events: []string{wire.EventTaskTerminal}, check: checkOutcome}
}

// runApplyCases runs each case as a parallel subtest.
func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runApply(t, c)
		})
	}
}

func runApply(t *testing.T, c applyCase) {
	t.Helper()
	before := deepCopy(c.task)
	got, err := tasks.Apply(c.task, c.cmd, now)

	if !reflect.DeepEqual(c.task, before) {
		t.Errorf("Apply mutated its input task:\nbefore %+v\nafter  %+v", before, c.task)
	}
	checkError(t, err, c.want)
	if err != nil {
		if got.Changed || len(got.Events) > 0 {
			t.Errorf("error %v came with Changed=%v and events %v", err, got.Changed, eventTypes(got.Events))
		}
		return
	}

	if got.Changed != c.want.changed {
		t.Errorf("Changed = %v, want %v", got.Changed, c.want.changed)
	}
	if got.Task.Status != c.want.status {
		t.Errorf("status = %q, want %q", got.Task.Status, c.want.status)
	}
	if types := eventTypes(got.Events); !slices.Equal(types, c.want.events) {
		t.Errorf("events = %q, want %q", types, c.want.events)
	}
	if got.Changed {
		if got.Task.Revision != before.Revision+1 {
			t.Errorf("revision = %d, want %d", got.Task.Revision, before.Revision+1)
		}
		if want := events.At(now); got.Task.LastUpdatedAt != want {
			t.Errorf("lastUpdatedAt = %v, want %v", got.Task.LastUpdatedAt, want)
		}
		if got.Task.CreatedAt != before.CreatedAt {
			t.Errorf("createdAt = %v, want %v", got.Task.CreatedAt, before.CreatedAt)
		}
	} else if !reflect.DeepEqual(got.Task, before) {
		t.Errorf("unchanged result differs from the task:\ngot  %+v\nwant %+v", got.Task, before)
	}
	for _, e := range got.Events {
		if !strings.HasPrefix(e.Type, "task.") {
			continue
		}
		snap := snapshotOf(t, e)
		if snap.Revision != got.Task.Revision {
			t.Errorf("%s: data.task revision = %d, want %d", e.Type, snap.Revision, got.Task.Revision)
		}
		if !reflect.DeepEqual(snap, got.Task) {
			t.Errorf("%s: data.task is not the new task:\ngot  %+v\nwant %+v", e.Type, snap, got.Task)
		}
	}
	if c.want.check != nil {
		c.want.check(t, before, got)
	}
}

func checkError(t *testing.T, err error, w want) {
	t.Helper()
	var ve *problem.ValidationError
	switch {
	case w.err != nil:
		if !errors.Is(err, w.err) {
			t.Fatalf("err = %v, want %v", err, w.err)
		}
		if errors.As(err, &ve) {
			t.Errorf("err = %v is also a problem.ValidationError", err)
		}
	case w.invalid:
		if !errors.As(err, &ve) {
			t.Fatalf("err = %v, want a *problem.ValidationError", err)
		}
	default:
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
	}
	for _, s := range sentinels {
		if s != w.err && errors.Is(err, s) {
			t.Errorf("err = %v also matches %v", err, s)
		}
	}
}

func snapshotOf(t *testing.T, e tasks.Emitted) tasks.Task {
	t.Helper()
	switch v := e.Data["task"].(type) {
	case *tasks.Task:
		return *v
	case tasks.Task:
		return v
	}
	t.Fatalf("%s: data.task is %T, want the task", e.Type, e.Data["task"])
	return tasks.Task{}
}

func eventTypes(es []tasks.Emitted) []string {
	var types []string
	for _, e := range es {
		types = append(types, e.Type)
	}
	return types
}

// deepCopy copies everything a Task reaches, so a later comparison shows any
// write through a shared slice, map or pointer.
func deepCopy(t tasks.Task) tasks.Task {
	c := t
	c.Input = bytes.Clone(t.Input)
	c.Metadata = bytes.Clone(t.Metadata)
	c.Progress = bytes.Clone(t.Progress)
	c.Result = bytes.Clone(t.Result)
	if t.InputRequests != nil {
		c.InputRequests = make([]tasks.InputRequest, len(t.InputRequests))
		for i, r := range t.InputRequests {
			r.Options = slices.Clone(r.Options)
			c.InputRequests[i] = r
		}
	}
	c.InputResponses = slices.Clone(t.InputResponses)
	if t.Error != nil {
		e := *t.Error
		e.Data = bytes.Clone(e.Data)
		c.Error = &e
	}
	if t.TTLMs != nil {
		v := *t.TTLMs
		c.TTLMs = &v
	}
	if t.ExpiresAt != nil {
		v := *t.ExpiresAt
		c.ExpiresAt = &v
	}
	if t.ReleasedAt != nil {
		v := *t.ReleasedAt
		c.ReleasedAt = &v
	}
	return c
}

// Checks the cells share.

func jsonEqual(t *testing.T, field string, got, want json.RawMessage) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s = %s, want %s", field, got, want)
	}
}

func requestIDs(reqs []tasks.InputRequest) []string {
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.RequestID)
	}
	return ids
}

func wantOpen(ids ...string) func(*testing.T, tasks.Task, tasks.Change) {
	return func(t *testing.T, _ tasks.Task, got tasks.Change) {
		t.Helper()
		if open := requestIDs(got.Task.InputRequests); !slices.Equal(open, ids) {
			t.Errorf("inputRequests = %q, want %q", open, ids)
		}
	}
}

// wantResponses wants the task to hold these answers, oldest first: those
// it held before as they were, each new one recorded as the answerer's, at
// now.
func wantResponses(answers ...tasks.Answer) func(*testing.T, tasks.Task, tasks.Change) {
	return func(t *testing.T, before tasks.Task, got tasks.Change) {
		t.Helper()
		held := got.Task.InputResponses
		if len(held) != len(answers) {
			t.Fatalf("inputResponses = %+v, want %+v", held, answers)
		}
		for i, a := range answers {
			want := tasks.InputResponse{Answer: a, AnsweredBy: answerer.By, AnsweredAt: events.At(now), Via: answerer.Via}
			if i < len(before.InputResponses) {
				want = before.InputResponses[i]
			}
			if held[i] != want {
				t.Errorf("inputResponses[%d] = %+v, want %+v", i, held[i], want)
			}
		}
	}
}

func all(checks ...func(*testing.T, tasks.Task, tasks.Change)) func(*testing.T, tasks.Task, tasks.Change) {
	return func(t *testing.T, before tasks.Task, got tasks.Change) {
		t.Helper()
		for _, c := range checks {
			c(t, before, got)
		}
	}
}

func checkProgress(t *testing.T, before tasks.Task, got tasks.Change) {
	if got.Task.StatusMessage != "halfway" {
		t.Errorf("statusMessage = %q, want %q", got.Task.StatusMessage, "halfway")
	}
	jsonEqual(t, "progress", got.Task.Progress, json.RawMessage(`{"pct":50}`))
	if !slices.Equal(requestIDs(got.Task.InputRequests), requestIDs(before.InputRequests)) {
		t.Errorf("inputRequests = %q, want %q", requestIDs(got.Task.InputRequests), requestIDs(before.InputRequests))
	}
}

func checkMessage(t *testing.T, before tasks.Task, got tasks.Change) {
	if got.Task.StatusMessage != before.StatusMessage {
		t.Errorf("statusMessage = %q, want it kept as %q", got.Task.StatusMessage, before.StatusMessage)
	}
	jsonEqual(t, "progress", got.Task.Progress, before.Progress)
	if len(got.Events) == 0 {
		return
	}
	if text := got.Events[0].Data["text"]; text != "need a bigger disk" {
		t.Errorf("task.message data.text = %v, want %q", text, "need a bigger disk")
	}
}

// checkOutcome asserts the terminal fields: result only when completed, error
// only when failed, cancelReason only when cancelled, and no open request.
func checkOutcome(t *testing.T, before tasks.Task, got tasks.Change) {
	task := got.Task
	if len(task.InputRequests) != 0 {
		t.Errorf("inputRequests = %q, want none once terminal", requestIDs(task.InputRequests))
	}
	if !slices.Equal(task.InputResponses, before.InputResponses) {
		t.Errorf("inputResponses = %+v, want them kept as %+v", task.InputResponses, before.InputResponses)
	}
	switch task.Status {
	case tasks.Completed:
		jsonEqual(t, "result", task.Result, json.RawMessage(`{"ok":true}`))
		if task.Error != nil || task.CancelReason != "" {
			t.Errorf("completed task has error %+v, cancelReason %q", task.Error, task.CancelReason)
		}
	case tasks.Failed:
		want := tasks.TaskError{Message: "disk full", Data: json.RawMessage(`{"free":0}`)}
		if task.Error == nil || !reflect.DeepEqual(*task.Error, want) {
			t.Errorf("error = %+v, want %+v", task.Error, want)
		}
		if task.StatusMessage != "disk full" {
			t.Errorf("statusMessage = %q, want the error message", task.StatusMessage)
		}
		if task.Result != nil || task.CancelReason != "" {
			t.Errorf("failed task has result %s, cancelReason %q", task.Result, task.CancelReason)
		}
	case tasks.Cancelled:
		if task.CancelReason != "superseded" || task.StatusMessage != "superseded" {
			t.Errorf("cancelReason, statusMessage = %q, %q, want the reason in both", task.CancelReason, task.StatusMessage)
		}
		if task.Result != nil || task.Error != nil {
			t.Errorf("cancelled task has result %s, error %+v", task.Result, task.Error)
		}
	}
}

// checkReleased asserts a release: releasedAt is now and nothing else
// changed but the revision and lastUpdatedAt.
func checkReleased(t *testing.T, before tasks.Task, got tasks.Change) {
	if got.Task.ReleasedAt == nil || *got.Task.ReleasedAt != events.At(now) {
		t.Errorf("releasedAt = %v, want %v", got.Task.ReleasedAt, events.At(now))
	}
	rest := got.Task
	rest.ReleasedAt, rest.Revision, rest.LastUpdatedAt = nil, before.Revision, before.LastUpdatedAt
	if !reflect.DeepEqual(rest, before) {
		t.Errorf("release changed more than releasedAt:\ngot  %+v\nwant %+v", got.Task, before)
	}
}

var (
	allStatuses = []tasks.Status{tasks.Working, tasks.InputRequired, tasks.Completed, tasks.Failed, tasks.Cancelled}
	allCommands = []tasks.CommandKind{
		tasks.CmdProgress, tasks.CmdMessage, tasks.CmdRequireInput, tasks.CmdRespond,
		tasks.CmdComplete, tasks.CmdFail, tasks.CmdCancel, tasks.CmdRelease,
	}
)

// TestApplyCells is the table of SPEC 3.2, one case per cell (and for respond
// from a non-terminal status, one per outcome the cell names).
func TestApplyCells(t *testing.T) {
	t.Parallel()
	releasedEvent := []string{wire.EventTaskReleased}
	cases := []applyCase{
		// working
		{"working/progress", workingTask(), progressCmd(), want{
			status: tasks.Working, changed: true, events: []string{wire.EventTaskProgress}, check: checkProgress,
		}},
		{"working/message", workingTask(), messageCmd(), want{
			status: tasks.Working, changed: true, events: []string{wire.EventTaskMessage}, check: checkMessage,
		}},
		{"working/require_input", workingTask(), requireInputCmd(), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskStatus, wire.EventInputRequested},
			check: all(wantOpen("go"), wantResponses(done1, done2)),
		}},
		{"working/respond", workingTask(), respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}),
			refused(tasks.ErrNotInputRequired)},
		{"working/respond identical to a recorded answer", workingTask(), respondCmd(done1),
			unchanged(tasks.Working)},
		{"working/complete", workingTask(), completeCmd(), ended(tasks.Completed)},
		{"working/fail", workingTask(), failCmd(), ended(tasks.Failed)},
		{"working/cancel", workingTask(), cancelCmd(), ended(tasks.Cancelled)},
		{"working/release", workingTask(), releaseCmd(), refused(tasks.ErrNotTerminal)},

		// input_required
		{"input_required/progress", waitingTask(), progressCmd(), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskProgress}, check: checkProgress,
		}},
		{"input_required/message", waitingTask(), messageCmd(), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskMessage},
			check: all(checkMessage, wantOpen("pick", "name")),
		}},
		{"input_required/require_input", waitingTask(), requireInputCmd(), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskStatus, wire.EventInputRequested},
			check: all(wantOpen("pick", "name", "go"), wantResponses(done1, done2)),
		}},
		{"input_required/respond leaving a request open", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}), want{
				status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
				check: all(wantOpen("name"), wantResponses(done1, done2, tasks.Answer{RequestID: "pick", OptionID: "eu"})),
			}},
		{"input_required/respond answering the last open request", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}, tasks.Answer{RequestID: "name", Text: "feature/x"}), want{
				status: tasks.Working, changed: true, events: []string{wire.EventInputResolved, wire.EventTaskStatus},
				check: all(wantOpen(), wantResponses(done1, done2,
					tasks.Answer{RequestID: "pick", OptionID: "eu"}, tasks.Answer{RequestID: "name", Text: "feature/x"})),
			}},
		{"input_required/complete", waitingTask(), completeCmd(), ended(tasks.Completed)},
		{"input_required/fail", waitingTask(), failCmd(), ended(tasks.Failed)},
		{"input_required/cancel", waitingTask(), cancelCmd(), ended(tasks.Cancelled)},
		{"input_required/release", waitingTask(), releaseCmd(), refused(tasks.ErrNotTerminal)},
	}
	// completed, failed, cancelled: a cancel is a no-op, every other command
	// is refused.
	for _, task := range []func() tasks.Task{completedTask, failedTask, cancelledTask} {
		for _, cmd := range []func() tasks.Command{
			progressCmd, messageCmd, func() tasks.Command { return requireInputCmd() },
			func() tasks.Command { return respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}) },
			completeCmd, failCmd,
		} {
			c := applyCase{task: task(), cmd: cmd(), want: refused(tasks.ErrTerminal)}
			c.name = fmt.Sprintf("%s/%s", c.task.Status, c.cmd.Kind)
			cases = append(cases, c)
		}
		c := applyCase{task: task(), cmd: cancelCmd()}
		c.name, c.want = fmt.Sprintf("%s/%s", c.task.Status, c.cmd.Kind), unchanged(c.task.Status)
		cases = append(cases, c)
		r := applyCase{task: task(), cmd: releaseCmd()}
		r.name = fmt.Sprintf("%s/%s", r.task.Status, r.cmd.Kind)
		r.want = want{status: r.task.Status, changed: true, events: releasedEvent, check: checkReleased}
		cases = append(cases, r)
	}

	covered := make(map[string]bool)
	for _, c := range cases {
		covered[fmt.Sprintf("%s/%s", c.task.Status, c.cmd.Kind)] = true
	}
	for _, s := range allStatuses {
		for _, k := range allCommands {
			if cell := fmt.Sprintf("%s/%s", s, k); !covered[cell] {
				t.Errorf("cell %s has no case", cell)
			}
		}
	}

	runApplyCases(t, cases)
}

var (
	declinePick = tasks.Answer{RequestID: "pick", Action: wire.ActionDecline}
	cancelName  = tasks.Answer{RequestID: "name", Action: wire.ActionCancel}
)

// TestApplyAnswers covers the "Answers" rules of SPEC 3.2.
func TestApplyAnswers(t *testing.T) {
	t.Parallel()
	pickEU := tasks.Answer{RequestID: "pick", OptionID: "eu"}
	nameX := tasks.Answer{RequestID: "name", Text: "feature/x"}
	cases := []applyCase{
		// A request already answered: the same answer is a no-op, another one a conflict.
		{"working/same option as recorded", workingTask(), respondCmd(done1), unchanged(tasks.Working)},
		{"working/same text as recorded", workingTask(), respondCmd(done2), unchanged(tasks.Working)},
		{"input_required/same answer as recorded", waitingTask(), respondCmd(done1), unchanged(tasks.InputRequired)},
		{"working/other option than recorded", workingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", OptionID: "no"}), refused(tasks.ErrInputConflict)},
		{"input_required/other option than recorded", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", OptionID: "no"}), refused(tasks.ErrInputConflict)},
		{"input_required/other text than recorded", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done2", Text: "dev"}), refused(tasks.ErrInputConflict)},
		{"input_required/recorded text plus an option", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done2", OptionID: "yes", Text: "main"}), refused(tasks.ErrInputConflict)},
		{"working/recorded answer judged before status", workingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", Text: "sure"}), refused(tasks.ErrInputConflict)},

		// Through an answer URL (OpenOnly) a recorded answer closes the
		// request, even the same answer; an open one is judged as usual.
		{"open only/same answer as recorded", waitingTask(), openOnly(respondCmd(done1)), refused(tasks.ErrInputClosed)},
		{"open only/other answer than recorded", waitingTask(),
			openOnly(respondCmd(tasks.Answer{RequestID: "done1", OptionID: "no"})), refused(tasks.ErrInputClosed)},
		{"open only/working, same answer as recorded", workingTask(), openOnly(respondCmd(done1)), refused(tasks.ErrInputClosed)},
		{"open only/option not among the options", waitingTask(),
			openOnly(respondCmd(tasks.Answer{RequestID: "pick", OptionID: "asia"})), invalid},

		// An open request: the option must be its own; text only when freeform.
		{"option not among the options", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "asia"}), invalid},
		{"option of another request", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "yes"}), invalid},
		{"text to a select without allowFreeform", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", Text: "eu please"}), invalid},
		{"option plus text to a select without allowFreeform", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu", Text: "eu please"}), invalid},
		{"option to a text request with no options", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "name", OptionID: "yes"}), invalid},
		{"neither option nor text", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick"}), invalid},
		{"text too long", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "name", Text: strings.Repeat("x", 8001)}), invalid},
		{"text to display text", waitingTask(reqName(), reqNote()), respondCmd(nameX), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
			check: all(wantOpen("note"), wantResponses(done1, done2, nameX)),
		}},
		{"text to allowFreeform", waitingTask(reqName(), reqNote()),
			respondCmd(tasks.Answer{RequestID: "note", Text: "use SSD"}), want{
				status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
				check: wantOpen("name"),
			}},
		{"option to allowFreeform", waitingTask(reqName(), reqNote()),
			respondCmd(tasks.Answer{RequestID: "note", OptionID: "nothing"}), want{
				status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
				check: wantOpen("name"),
			}},

		// Any other id.
		{"input_required/unknown id", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "nope", OptionID: "yes"}), refused(tasks.ErrUnknownRequest)},
		{"working/unknown id", workingTask(),
			respondCmd(tasks.Answer{RequestID: "nope", OptionID: "yes"}), refused(tasks.ErrNotInputRequired)},

		// A batch is all or nothing.
		{"batch/good then bad option", waitingTask(),
			respondCmd(pickEU, tasks.Answer{RequestID: "name", OptionID: "x"}), invalid},
		{"batch/bad option then good", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "asia"}, nameX), invalid},
		{"batch/good then unknown", waitingTask(),
			respondCmd(pickEU, tasks.Answer{RequestID: "nope", OptionID: "yes"}), refused(tasks.ErrUnknownRequest)},
		{"batch/good then conflict", waitingTask(),
			respondCmd(pickEU, nameX, tasks.Answer{RequestID: "done1", OptionID: "no"}), refused(tasks.ErrInputConflict)},
		{"batch/no-op then unknown while working", workingTask(),
			respondCmd(done1, tasks.Answer{RequestID: "pick", OptionID: "eu"}), refused(tasks.ErrNotInputRequired)},
		{"batch/only no-ops while input_required", waitingTask(), respondCmd(done2, done1), unchanged(tasks.InputRequired)},
		{"batch/only no-ops while working", workingTask(), respondCmd(done1, done2), unchanged(tasks.Working)},
		{"batch/no-op plus a new answer records only the new one", waitingTask(), respondCmd(done1, pickEU), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
			check: all(wantOpen("name"), wantResponses(done1, done2, pickEU)),
		}},
		{"batch/no-op plus the last answers leaves input_required", waitingTask(), respondCmd(nameX, done2, pickEU), want{
			status: tasks.Working, changed: true, events: []string{wire.EventInputResolved, wire.EventTaskStatus},
			check: all(wantOpen(), wantResponses(done1, done2, nameX, pickEU)),
		}},
		{"batch/same id twice, same answer", waitingTask(), respondCmd(pickEU, pickEU), invalid},
		{"batch/same id twice, other answers", waitingTask(),
			respondCmd(pickEU, tasks.Answer{RequestID: "pick", OptionID: "us"}), invalid},
		{"batch/recorded id twice", waitingTask(), respondCmd(done1, done1), invalid},
		{"input_required/empty batch", waitingTask(), respondCmd(), invalid},
		{"working/empty batch", workingTask(), respondCmd(), invalid},

		// Terminal comes first, even for an answer identical to a recorded one.
		{"completed/same answer as recorded", completedTask(), respondCmd(done1), refused(tasks.ErrTerminal)},
		{"cancelled/same answer as recorded", cancelledTask(), respondCmd(done1), refused(tasks.ErrTerminal)},

		// An action: accept by default; a decline or a cancel answers
		// without an option or text.
		{"decline leaves the others open", waitingTask(), respondCmd(declinePick), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventInputResolved},
			check: all(wantOpen("name"), wantResponses(done1, done2, declinePick)),
		}},
		{"cancel of the last open request leaves input_required", waitingTask(reqName()), respondCmd(cancelName), want{
			status: tasks.Working, changed: true, events: []string{wire.EventInputResolved, wire.EventTaskStatus},
			check: all(wantOpen(), wantResponses(done1, done2, cancelName)),
		}},
		{"accept said out loud is the recorded accept", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", OptionID: "yes", Action: wire.ActionAccept}), unchanged(tasks.InputRequired)},
		{"decline of an accepted request", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", Action: wire.ActionDecline}), refused(tasks.ErrInputConflict)},
		{"decline with an option", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu", Action: wire.ActionDecline}), invalid},
		{"cancel with text", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "name", Text: "no", Action: wire.ActionCancel}), invalid},
		{"unknown action", waitingTask(), respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu", Action: "maybe"}), invalid},
		{"unknown action to a recorded request", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "done1", OptionID: "yes", Action: "maybe"}), invalid},
		{"accept with neither option nor text", waitingTask(),
			respondCmd(tasks.Answer{RequestID: "pick", Action: wire.ActionAccept}), invalid},
	}
	runApplyCases(t, cases)
}

// TestApplyRequireInput covers request ids (unique over the task's life) and
// the batch limits.
func TestApplyRequireInput(t *testing.T) {
	t.Parallel()
	many := func(n int) []tasks.InputRequest {
		reqs := make([]tasks.InputRequest, n)
		for i := range reqs {
			reqs[i] = reqConfirm(fmt.Sprintf("q%d", i))
		}
		return reqs
	}
	noPrompt := reqConfirm("go")
	noPrompt.Prompt = ""
	noID := reqConfirm("")
	cases := []applyCase{
		{"working/reuses an answered id", workingTask(), requireInputCmd(reqConfirm("done1")), invalid},
		{"input_required/reuses an answered id", waitingTask(), requireInputCmd(reqConfirm("done2")), invalid},
		{"input_required/reuses an open id", waitingTask(), requireInputCmd(reqConfirm("pick")), invalid},
		{"same id twice in one batch", workingTask(), requireInputCmd(reqConfirm("go"), reqConfirm("go")), invalid},
		{"a new request plus a reused one", workingTask(), requireInputCmd(reqConfirm("go"), reqConfirm("done1")), invalid},
		{"empty batch", workingTask(), tasks.Command{Kind: tasks.CmdRequireInput}, invalid},
		{"65 requests", workingTask(), requireInputCmd(many(65)...), invalid},
		{"64 requests", workingTask(), requireInputCmd(many(64)...), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskStatus, wire.EventInputRequested},
		}},
		{"missing requestId", workingTask(), requireInputCmd(noID), invalid},
		{"invalid request", waitingTask(), requireInputCmd(reqConfirm("go"), noPrompt), invalid},
		{"input_required/adds in order and stays", waitingTask(), requireInputCmd(reqConfirm("go"), reqConfirm("go2")), want{
			status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskStatus, wire.EventInputRequested},
			check: wantOpen("pick", "name", "go", "go2"),
		}},
	}
	runApplyCases(t, cases)
}

// TestApplyCommandFields covers what each command reads and refuses.
func TestApplyCommandFields(t *testing.T) {
	t.Parallel()
	msgOnly := "halfway"
	empty := ""
	cases := []applyCase{
		{"progress with neither field", workingTask(), tasks.Command{Kind: tasks.CmdProgress}, invalid},
		{"progress with statusMessage only keeps progress", waitingTask(),
			tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msgOnly}, want{
				status: tasks.InputRequired, changed: true, events: []string{wire.EventTaskProgress},
				check: func(t *testing.T, before tasks.Task, got tasks.Change) {
					if got.Task.StatusMessage != "halfway" {
						t.Errorf("statusMessage = %q, want %q", got.Task.StatusMessage, "halfway")
					}
					jsonEqual(t, "progress", got.Task.Progress, before.Progress)
				},
			}},
		{"progress with progress only keeps statusMessage", workingTask(),
			tasks.Command{Kind: tasks.CmdProgress, Progress: json.RawMessage(`{"pct":90}`)}, want{
				status: tasks.Working, changed: true, events: []string{wire.EventTaskProgress},
				check: func(t *testing.T, before tasks.Task, got tasks.Change) {
					if got.Task.StatusMessage != before.StatusMessage {
						t.Errorf("statusMessage = %q, want %q", got.Task.StatusMessage, before.StatusMessage)
					}
					jsonEqual(t, "progress", got.Task.Progress, json.RawMessage(`{"pct":90}`))
				},
			}},
		{"progress with an empty statusMessage clears it", workingTask(),
			tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &empty}, want{
				status: tasks.Working, changed: true, events: []string{wire.EventTaskProgress},
				check: func(t *testing.T, _ tasks.Task, got tasks.Change) {
					if got.Task.StatusMessage != "" {
						t.Errorf("statusMessage = %q, want empty", got.Task.StatusMessage)
					}
				},
			}},
		{"message without text", workingTask(), tasks.Command{Kind: tasks.CmdMessage, Data: json.RawMessage(`{}`)}, invalid},
		{"fail without error", workingTask(), tasks.Command{Kind: tasks.CmdFail}, invalid},
		{"fail with an empty message", waitingTask(), tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{}}, invalid},
		{"cancel without reason keeps statusMessage", waitingTask(), tasks.Command{Kind: tasks.CmdCancel}, want{
			status: tasks.Cancelled, changed: true, events: []string{wire.EventTaskTerminal},
			check: func(t *testing.T, before tasks.Task, got tasks.Change) {
				if got.Task.CancelReason != "" || got.Task.StatusMessage != before.StatusMessage {
					t.Errorf("cancelReason, statusMessage = %q, %q, want %q, %q",
						got.Task.CancelReason, got.Task.StatusMessage, "", before.StatusMessage)
				}
				if len(got.Task.InputRequests) != 0 {
					t.Errorf("inputRequests = %q, want none", requestIDs(got.Task.InputRequests))
				}
			},
		}},
		{"unknown command", workingTask(), tasks.Command{Kind: "pause"}, invalid},
		{"terminal is judged before the fields", completedTask(), tasks.Command{Kind: tasks.CmdProgress}, refused(tasks.ErrTerminal)},
	}
	runApplyCases(t, cases)
}

// step applies cmd to task and fails the test on an unexpected error.
func step(t *testing.T, task tasks.Task, cmd tasks.Command) tasks.Change {
	t.Helper()
	got, err := tasks.Apply(task, cmd, now)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Kind, err)
	}
	return got
}

func TestApplyTerminalIsFinal(t *testing.T) {
	t.Parallel()
	cancelled := step(t, workingTask(), cancelCmd()).Task
	if cancelled.Status != tasks.Cancelled || cancelled.Revision != 8 {
		t.Fatalf("after cancel: status %q revision %d, want cancelled 8", cancelled.Status, cancelled.Revision)
	}
	for _, cmd := range []tasks.Command{completeCmd(), failCmd()} {
		if _, err := tasks.Apply(cancelled, cmd, now.Add(time.Second)); !errors.Is(err, tasks.ErrTerminal) {
			t.Errorf("late %s after cancel: err = %v, want ErrTerminal", cmd.Kind, err)
		}
	}
	again := step(t, cancelled, cancelCmd())
	if again.Changed || !reflect.DeepEqual(again.Task, cancelled) {
		t.Errorf("second cancel changed the task: %+v", again)
	}

	completed := step(t, waitingTask(), completeCmd()).Task
	if _, err := tasks.Apply(completed, cancelCmd(), now); err != nil {
		t.Errorf("cancel after complete: err = %v, want none", err)
	}
	if _, err := tasks.Apply(completed, failCmd(), now); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("fail after complete: err = %v, want ErrTerminal", err)
	}
}

// TestApplyRelease covers release beyond the cells: once per task, and a
// released task is as final as before.
func TestApplyRelease(t *testing.T) {
	t.Parallel()
	cases := []applyCase{
		{"completed and released/release", released(completedTask()), releaseCmd(), unchanged(tasks.Completed)},
		{"failed and released/release", released(failedTask()), releaseCmd(), unchanged(tasks.Failed)},
		{"cancelled and released/release", released(cancelledTask()), releaseCmd(), unchanged(tasks.Cancelled)},
		{"cancelled and released/cancel", released(cancelledTask()), cancelCmd(), unchanged(tasks.Cancelled)},
		{"completed and released/complete", released(completedTask()), completeCmd(), refused(tasks.ErrTerminal)},
		{"cancelled and released/progress", released(cancelledTask()), progressCmd(), refused(tasks.ErrTerminal)},
		{"release reads no field of the command", completedTask(),
			tasks.Command{Kind: tasks.CmdRelease, Reason: "ignored", Text: "ignored"}, want{
				status: tasks.Completed, changed: true, events: []string{wire.EventTaskReleased}, check: checkReleased,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runApply(t, c)
		})
	}

	// Cancel, then release: two revisions, the outcome kept.
	cancelled := step(t, waitingTask(), cancelCmd()).Task
	rel := step(t, cancelled, releaseCmd())
	if rel.Task.Revision != cancelled.Revision+1 || rel.Task.Status != tasks.Cancelled || rel.Task.CancelReason != "superseded" {
		t.Errorf("release after cancel: %+v", rel.Task)
	}
}

func TestApplyInputRoundTrip(t *testing.T) {
	t.Parallel()
	task := workingTask()
	task = step(t, task, requireInputCmd(reqPick(), reqName())).Task
	task = step(t, task, respondCmd(tasks.Answer{RequestID: "pick", OptionID: "us"})).Task
	if task.Status != tasks.InputRequired {
		t.Fatalf("after one of two answers: status %q, want input_required", task.Status)
	}
	task = step(t, task, respondCmd(tasks.Answer{RequestID: "name", Text: "main"})).Task
	if task.Status != tasks.Working || len(task.InputRequests) != 0 || task.Revision != 10 {
		t.Fatalf("after both answers: status %q, open %q, revision %d, want working, none, 10",
			task.Status, requestIDs(task.InputRequests), task.Revision)
	}

	retry := step(t, task, respondCmd(tasks.Answer{RequestID: "pick", OptionID: "us"}))
	if retry.Changed {
		t.Errorf("a retried answer changed the task")
	}
	if _, err := tasks.Apply(task, respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}), now); !errors.Is(err, tasks.ErrInputConflict) {
		t.Errorf("a changed answer after resolution: err = %v, want ErrInputConflict", err)
	}
	var ve *problem.ValidationError
	if _, err := tasks.Apply(task, requireInputCmd(reqPick()), now); !errors.As(err, &ve) {
		t.Errorf("asking again with a used id: err = %v, want a problem.ValidationError", err)
	}
}

// Two changes decided from one task must not share storage: appending to
// slices with spare capacity would let the second overwrite the first.
func TestApplyResultsDoNotShareStorage(t *testing.T) {
	t.Parallel()
	task := waitingTask(reqPick(), reqName(), reqNote())
	task.InputResponses = append(make([]tasks.InputResponse, 0, 16), task.InputResponses...)
	task.InputRequests = append(make([]tasks.InputRequest, 0, 16), task.InputRequests...)

	first := step(t, task, respondCmd(tasks.Answer{RequestID: "pick", OptionID: "eu"}))
	firstCopy := deepCopy(first.Task)
	step(t, task, respondCmd(tasks.Answer{RequestID: "name", Text: "main"}))
	step(t, task, requireInputCmd(reqConfirm("go")))
	if !reflect.DeepEqual(first.Task, firstCopy) {
		t.Errorf("a later Apply changed an earlier result:\nbefore %+v\nafter  %+v", firstCopy, first.Task)
	}
}

// Each answer is recorded with who gave it, through what and when, in the
// task and in input.resolved; the same answer given again by anybody,
// through any channel, is a no-op that keeps the first record; a respond
// that names nobody is refused.
func TestApplyRecordsWhoAnswered(t *testing.T) {
	t.Parallel()
	slack := tasks.Answerer{By: "user:alice", SlackUserID: "U0ALICE", Via: wire.ViaSlack}
	cmd := tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "pick", OptionID: "eu"}}, Answerer: slack}
	got := step(t, waitingTask(), cmd)
	want := tasks.InputResponse{Answer: tasks.Answer{RequestID: "pick", OptionID: "eu"}, AnsweredBy: "user:alice",
		SlackUserID: "U0ALICE", AnsweredAt: events.At(now), Via: wire.ViaSlack}
	if r := got.Task.InputResponses; len(r) != 3 || r[2] != want {
		t.Fatalf("inputResponses = %+v, want the answer last as %+v", r, want)
	}
	data, _ := json.Marshal(got.Events[0].Data["responses"])
	const wantData = `[{"requestId":"pick","optionId":"eu","answeredBy":"user:alice","slackUserId":"U0ALICE",` +
		`"answeredAt":"2025-03-14T14:09:26.535Z","via":"slack"}]`
	if got.Events[0].Type != wire.EventInputResolved || string(data) != wantData {
		t.Errorf("%s data.responses = %s, want %s", got.Events[0].Type, data, wantData)
	}

	again := cmd
	again.Answerer = tasks.Answerer{By: "user:bob", Via: wire.ViaAPI}
	if retry := step(t, got.Task, again); retry.Changed || retry.Task.InputResponses[2] != want {
		t.Errorf("the same answer from another channel changed the task: %+v", retry.Task.InputResponses)
	}

	for _, nobody := range []tasks.Answerer{{}, {By: "user:alice"}, {Via: wire.ViaAPI}} {
		cmd.Answerer = nobody
		if _, err := tasks.Apply(waitingTask(), cmd, now); err == nil {
			t.Errorf("a respond answered by %+v was applied", nobody)
		}
	}
}

// A cancel of an ended task is a read; a live-only cancel (the faces whose
// protocols refuse it) is ErrTerminal, and a live task is cancelled either
// way.
func TestLiveOnlyCancelRefusesAnEndedTask(t *testing.T) {
	for _, status := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
		got, err := tasks.Apply(taskIn(status), tasks.Command{Kind: tasks.CmdCancel}, now)
		if err != nil || got.Changed {
			t.Fatalf("cancel of a %s task: %+v %v, want a read", status, got, err)
		}
		if _, err := tasks.Apply(taskIn(status), tasks.Command{Kind: tasks.CmdCancel, LiveOnly: true}, now); !errors.Is(err, tasks.ErrTerminal) {
			t.Fatalf("live-only cancel of a %s task: %v, want ErrTerminal", status, err)
		}
	}
	got, err := tasks.Apply(workingTask(), tasks.Command{Kind: tasks.CmdCancel, LiveOnly: true}, now)
	if err != nil || got.Task.Status != tasks.Cancelled {
		t.Fatalf("live-only cancel of a working task: %+v %v", got.Task, err)
	}
}
