package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// The history of each task must be linearizable: clients on two replicas
// sharing one Redis issue mixed commands on the same tasks, and a checker
// finds one sequential order of revisions that explains every answer.
//
// The check always decides, however slow the machine. The checker takes
// each task's history on its own (taskModel.Partition) and visits each pair
// (set of operations linearized so far, model state) at most once. A set it
// can reach holds a prefix of each client's operations, since an operation
// that returned before another was called comes first: with clientsPerTask
// clients of opsPerClient operations on a task, at most
// (opsPerClient+1)^clientsPerTask = 65536 sets, and one more for the last
// read, which follows them all. And the set fixes the state: the revision,
// status and answered questions all follow from which operations in it
// succeeded. So the search takes at most that many steps of a few model
// calls per task, and it runs with no timeout: it never answers Unknown, and
// a history it cannot explain is Illegal.

const questions = 3 // each task starts asking this many questions

// Each task has its own clients, half on each replica: no more than
// clientsPerTask commands on one task are ever in flight at once.
const nTasks, clientsPerTask, opsPerClient = 25, 4, 15

type linInput struct {
	Task string
	Op   string // get, progress, respond, complete, fail, cancel
	Q    int    // respond: which question
}

type linOutput struct {
	OK     bool
	Code   string // error code when not OK
	Rev    int64
	Status string
	Gone   bool // no answer (transport error); such calls fail the test
}

type linState struct {
	Rev      int64
	Status   string
	Answered int // bit set of answered questions
}

func terminal(s string) bool { return s == "completed" || s == "failed" || s == "cancelled" }

var taskModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			id := op.Input.(linInput).Task
			if _, ok := by[id]; !ok {
				order = append(order, id)
			}
			by[id] = append(by[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, id := range order {
			out = append(out, by[id])
		}
		return out
	},
	Init: func() any { return linState{Rev: 2, Status: "input_required"} },
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(linState), in.(linInput), out.(linOutput)
		next := s
		switch i.Op {
		case "get":
			return o.OK && o.Rev == s.Rev && o.Status == s.Status, s
		case "progress":
			if terminal(s.Status) {
				return !o.OK && o.Code == client.CodeTaskTerminal && o.Status == s.Status, s
			}
			next.Rev++
		case "respond":
			if terminal(s.Status) {
				return !o.OK && o.Code == client.CodeTaskTerminal && o.Status == s.Status, s
			}
			if s.Answered&(1<<i.Q) != 0 { // the same answer again: a no-op
				return o.OK && o.Rev == s.Rev && o.Status == s.Status, s
			}
			next.Rev++
			next.Answered |= 1 << i.Q
			if next.Answered == 1<<questions-1 {
				next.Status = "working"
			}
		case "complete", "fail", "cancel":
			if terminal(s.Status) {
				if i.Op == "cancel" { // cancelling a finished task is a read
					return o.OK && o.Rev == s.Rev && o.Status == s.Status, s
				}
				return !o.OK && o.Code == client.CodeTaskTerminal && o.Status == s.Status, s
			}
			next.Rev++
			next.Status = map[string]string{"complete": "completed", "fail": "failed", "cancel": "cancelled"}[i.Op]
		}
		return o.OK && o.Rev == next.Rev && o.Status == next.Status, next
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(linInput), out.(linOutput)
		return fmt.Sprintf("%s(q%d) -> ok=%v %s rev=%d %s", i.Op, i.Q, o.OK, o.Code, o.Rev, o.Status)
	},
}

// The checker with taskModel catches a write applied twice and a write
// lost, whether the commands overlap or follow one another, and passes the
// same commands applied once each.
func TestTaskModelCatchesDoubleAndLostWrites(t *testing.T) {
	t.Parallel()
	// op is one command on one task from client c, called at call and
	// answered at ret.
	op := func(c int, call, ret int64, in string, q int, out linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: linInput{Task: "t", Op: in, Q: q}, Call: call, Output: out, Return: ret}
	}
	ok := func(rev int64, status string) linOutput { return linOutput{OK: true, Rev: rev, Status: status} }
	terminal := func(status string) linOutput {
		return linOutput{Code: client.CodeTaskTerminal, Status: status}
	}
	const ir, w = "input_required", "working"
	// A case is commands that cases of one kind of write share, then the
	// operation that tells the outcomes apart.
	progress := []porcupine.Operation{op(0, 1, 2, "progress", 0, ok(3, ir))}
	overlapping := func(first linOutput) []porcupine.Operation {
		return []porcupine.Operation{op(0, 1, 4, "progress", 0, first), op(1, 2, 3, "progress", 0, ok(3, ir))}
	}
	answers := []porcupine.Operation{
		op(0, 1, 2, "respond", 0, ok(3, ir)),
		op(0, 3, 4, "respond", 1, ok(4, ir)),
		op(0, 5, 6, "respond", 2, ok(5, w)),
	}
	ends := func(fail linOutput) []porcupine.Operation {
		return []porcupine.Operation{op(0, 1, 4, "complete", 0, ok(3, "completed")), op(1, 2, 3, "fail", 0, fail)}
	}
	for _, c := range []struct {
		name     string
		commands []porcupine.Operation
		last     porcupine.Operation
		want     porcupine.CheckResult
	}{
		{"progress applied once", progress, op(0, 3, 4, "get", 0, ok(3, ir)), porcupine.Ok},
		{"progress applied twice", progress, op(0, 3, 4, "get", 0, ok(4, ir)), porcupine.Illegal},
		{"progress lost", progress, op(0, 3, 4, "get", 0, ok(2, ir)), porcupine.Illegal},
		{"overlapping progresses applied once each", overlapping(ok(4, ir)), op(2, 5, 6, "get", 0, ok(4, ir)), porcupine.Ok},
		{"overlapping progresses, one applied twice", overlapping(ok(4, ir)), op(2, 5, 6, "get", 0, ok(5, ir)), porcupine.Illegal},
		{"overlapping progresses, one lost", overlapping(ok(3, ir)), op(2, 5, 6, "get", 0, ok(3, ir)), porcupine.Illegal},
		{"an answer given twice is applied once", answers[:1], op(1, 3, 4, "respond", 0, ok(3, ir)), porcupine.Ok},
		{"an answer applied twice", answers[:1], op(1, 3, 4, "respond", 0, ok(4, ir)), porcupine.Illegal},
		{"every answer kept", answers, op(1, 7, 8, "get", 0, ok(5, w)), porcupine.Ok},
		{"an answer lost", answers, op(1, 7, 8, "get", 0, ok(5, ir)), porcupine.Illegal},
		{"overlapping ends, one wins", ends(terminal("completed")), op(2, 5, 6, "get", 0, ok(3, "completed")), porcupine.Ok},
		{"overlapping ends, both applied", ends(ok(4, "failed")), op(2, 5, 6, "get", 0, ok(4, "failed")), porcupine.Illegal},
	} {
		history := append(slices.Clip(c.commands), c.last)
		if res, info := porcupine.CheckOperationsVerbose(taskModel, history, 0); res != c.want {
			t.Errorf("%s: %v, want %v: %v", c.name, res, c.want, info)
		}
	}
}

func TestTaskHistoriesAreLinearizable(t *testing.T) {
	t.Parallel()
	servers := apptest.Replicas(t, 2, app.Config{})
	ctx := context.Background()
	owner := client.New(servers[0].URL, apptest.Token(t, "lin-owner"))
	ses := apptest.Session(t, ctx, owner)
	var ids []string
	for range nTasks {
		task, err := owner.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
		if err != nil {
			t.Fatal(err)
		}
		var reqs []client.InputRequest
		for q := range questions {
			reqs = append(reqs, client.InputRequest{
				RequestID: fmt.Sprintf("q%d", q), Prompt: "ok?",
				Options: []client.Choice{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}},
			})
		}
		if _, err := owner.RequireInput(ctx, task.TaskID, reqs); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}

	// Times are ticks of one counter, taken before a request is sent and
	// after its answer is read: a tick order is real-time order, and no two
	// ticks tie, so each client's operations follow one another strictly.
	var clock atomic.Int64
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	nClients := nTasks * clientsPerTask
	for c := range nClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := client.New(servers[c%len(servers)].URL, apptest.Token(t, "lin-owner"))
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			task := ids[c/clientsPerTask]
			for range opsPerClient {
				in := linInput{Task: task, Q: rng.IntN(questions)}
				// Terminal commands are rare, so histories are long and busy.
				switch r := rng.IntN(100); {
				case r < 30:
					in.Op = "get"
				case r < 60:
					in.Op = "progress"
				case r < 90:
					in.Op = "respond"
				case r < 94:
					in.Op = "complete"
				case r < 97:
					in.Op = "fail"
				default:
					in.Op = "cancel"
				}
				call := clock.Add(1)
				out := run(ctx, cl, in)
				ret := clock.Add(1)
				if out.Gone {
					t.Errorf("%s on %s: no answer", in.Op, in.Task)
					continue
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// A last read of each task, after every command: the history must end in
	// the state the task is in.
	final := map[string]int{} // task id: index of its last read in history
	for _, id := range ids {
		in := linInput{Task: id, Op: "get"}
		call := clock.Add(1)
		out := run(ctx, owner, in)
		ret := clock.Add(1)
		if out.Gone {
			t.Fatalf("get %s: no answer", id)
		}
		final[id] = len(history)
		history = append(history, porcupine.Operation{ClientId: nClients, Input: in, Call: call, Output: out, Return: ret})
	}

	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(taskModel, history, 0)
	took := time.Since(began)
	if res != porcupine.Ok {
		t.Fatalf("history of %d operations is not linearizable (%v): %v", len(history), res, info)
	}

	// The same history with each last read one revision behind, as if the
	// last write were lost, must be Illegal. Nothing explains such a read,
	// so the checker tries every order of every task's history: its worst
	// case on this history.
	lost := slices.Clone(history)
	for _, i := range final {
		out := lost[i].Output.(linOutput)
		out.Rev--
		lost[i].Output = out
	}
	began = time.Now()
	if res, _ := porcupine.CheckOperationsVerbose(taskModel, lost, 0); res != porcupine.Illegal {
		t.Fatalf("with the last write of each task lost, the history is %v, not Illegal", res)
	}
	tookAll := time.Since(began)

	// Exactly one terminal outcome per finished task, no answer lost, and the
	// revisions in the event log form one sequence.
	for _, id := range ids {
		task, err := owner.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		answered := map[string]bool{}
		for _, r := range task.InputResponses {
			if answered[r.RequestID] {
				t.Fatalf("%s: request %s answered twice", id, r.RequestID)
			}
			answered[r.RequestID] = true
		}
		for _, op := range history {
			in, out := op.Input.(linInput), op.Output.(linOutput)
			if in.Task == id && in.Op == "respond" && out.OK && !answered[fmt.Sprintf("q%d", in.Q)] {
				t.Fatalf("%s: an accepted answer to q%d is lost", id, in.Q)
			}
		}
		page, err := owner.TaskEvents(ctx, id, client.EventsParams{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		terminals, prev := 0, int64(0)
		for i, ev := range page.Events {
			// One change may append several events under one revision.
			if ev.Revision != prev+1 && (i == 0 || ev.Revision != prev) {
				t.Fatalf("%s: event %d has revision %d after %d", id, i, ev.Revision, prev)
			}
			prev = ev.Revision
			if ev.Type == client.EventTaskTerminal {
				terminals++
			}
		}
		last := page.Events[len(page.Events)-1].Revision
		if last != task.Revision {
			t.Fatalf("%s: log ends at revision %d, task is at %d", id, last, task.Revision)
		}
		if want := map[bool]int{true: 1, false: 0}[task.Terminal()]; terminals != want {
			t.Fatalf("%s: %d terminal events, task status %s", id, terminals, task.Status)
		}
	}
	t.Logf("%d operations by %d clients on %d tasks through %d replicas: linearizable, checked in %v; "+
		"a lost write found in %v, searching every order", len(history), nClients, nTasks, len(servers), took, tookAll)
}

func run(ctx context.Context, cl *client.Client, in linInput) linOutput {
	var task *client.Task
	var err error
	switch in.Op {
	case "get":
		task, err = cl.GetTask(ctx, in.Task)
	case "progress":
		task, err = cl.Progress(ctx, in.Task, client.ProgressInput{StatusMessage: client.String("step")})
	case "respond":
		task, err = cl.Respond(ctx, in.Task, []client.Answer{{RequestID: fmt.Sprintf("q%d", in.Q), OptionID: "a"}})
	case "complete":
		task, err = cl.Complete(ctx, in.Task, map[string]any{"ok": true})
	case "fail":
		task, err = cl.Fail(ctx, in.Task, "broke", nil)
	case "cancel":
		task, err = cl.Cancel(ctx, in.Task, "stop")
	}
	if err != nil {
		var e *client.Error
		if !asError(err, &e) {
			return linOutput{Gone: true}
		}
		out := linOutput{Code: e.Code}
		if e.Task != nil {
			out.Rev, out.Status = e.Task.Revision, e.Task.Status
		}
		return out
	}
	return linOutput{OK: true, Rev: task.Revision, Status: task.Status}
}
