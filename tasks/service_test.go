package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// replica is one replica's task service on a shared store. Its fan-in is not
// started, so its snapshot cache holds only what this replica read or wrote:
// a stale snapshot is certain, not a race.
func replica(s *store.Store) *tasks.Service {
	w := waits.New(waits.Config{}, nil, time.Now)
	return tasks.NewService(tasks.Config{}, s, w, metrics.New(), time.Now)
}

func decodeTask(t *testing.T, raw []byte) tasks.Task {
	t.Helper()
	var task tasks.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// openSession opens a session for owner: its id.
func openSession(t *testing.T, s *store.Store, owner authz.Principal) string {
	t.Helper()
	ses := sessions.NewService(sessions.Config{}, s, waits.New(waits.Config{}, nil, time.Now), time.Now)
	sraw, _, err := ses.Create(context.Background(), owner, sessions.CreateInput{}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	var session sessions.Session
	if err := json.Unmarshal(sraw, &session); err != nil {
		t.Fatal(err)
	}
	return session.SessionID
}

// startTask opens a session for owner and starts a task in it through svc:
// the task's id.
func startTask(t *testing.T, s *store.Store, svc *tasks.Service, owner authz.Principal) string {
	t.Helper()
	created, err := svc.Create(context.Background(), owner, tasks.CreateInput{SessionID: openSession(t, s, owner)}, idem.Key{})
	if err != nil {
		t.Fatal(err)
	}
	return decodeTask(t, created.JSON).TaskID
}

// The task a replica keeps decoded beside a snapshot it wrote or read is
// the task the snapshot decodes to, whatever the commands wrote (raw JSON
// sent with spaces in it, answers, a request's options, an error), and a
// command that changes what it was handed changes nothing kept.
func TestCachedTaskIsItsSnapshotDecoded(t *testing.T) {
	eachStored(t, "cache-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, session := st.s, st.svc, st.owner, st.ses
		check := func(id, what string) {
			t.Helper()
			cached, raw, ok := svc.Cached(id)
			if !ok {
				t.Fatalf("%s: nothing cached", what)
			}
			part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.Partitions)
			stored, err := s.GetJSON(ctx, s.Keys.Task(part, id))
			if err != nil || !bytes.Equal(raw, stored) {
				t.Fatalf("%s: cached snapshot %s, stored %s (%v)", what, raw, stored, err)
			}
			if want := decodeTask(t, stored); !reflect.DeepEqual(cached, want) {
				t.Errorf("%s: cached task\n%#v\nwant what its snapshot decodes to\n%#v", what, cached, want)
			}
			// What a command does to the task it was handed stays its own.
			cached.InputResponses = append(cached.InputResponses, tasks.InputResponse{Via: "nowhere"})
			if len(cached.InputRequests) > 0 {
				cached.InputRequests[0].Prompt = "changed"
				if len(cached.InputRequests[0].Options) > 0 {
					cached.InputRequests[0].Options[0].Label = "changed"
				}
			}
			if len(cached.Input) > 0 {
				cached.Input[0] = ' '
			}
			again, _, _ := svc.Cached(id)
			if want := decodeTask(t, stored); !reflect.DeepEqual(again, want) {
				t.Errorf("%s: a change to the cached task handed out reached the cache", what)
			}
		}
		ttl := int64(3_600_000)
		created, err := svc.Create(ctx, owner, tasks.CreateInput{
			SessionID: session, Kind: "k", Label: "l", TTLMs: &ttl,
			Input: json.RawMessage(`{ "repo" : "<b>r &amp; s</b>",  "n": [1, 2] }`), Metadata: json.RawMessage(`{"m" : true,  "k": "v"}`),
		}, idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		id := decodeTask(t, created.JSON).TaskID
		check(id, "created")
		msg := "on it"
		for _, c := range []struct {
			what string
			cmd  tasks.Command
		}{
			{"progress", tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg, Progress: json.RawMessage(`{ "pct" : 10 }`)}},
			{"require input", tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{{
				RequestID: "r1", Prompt: "Ship?", Options: []tasks.Option{{ID: "y", Label: "Yes"}, {ID: "n", Label: "No"}},
			}}}},
			{"respond", tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "r1", OptionID: "y"}},
				Answerer: tasks.Answerer{By: owner.ID, Via: "api"}}},
			{"message", tasks.Command{Kind: tasks.CmdMessage, Text: "half", Data: json.RawMessage(`{ "x" : 1 }`)}},
			{"fail", tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{Message: "no", Data: json.RawMessage(`{ "code" : 7 }`)}}},
		} {
			if _, err := svc.Run(ctx, owner, id, c.cmd, idem.Key{}); err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			check(id, c.what)
		}
	})
}

// A command decided on a stale cached snapshot loses the compare-and-set and
// is decided again on the stored task the script returned, and on that task
// alone: nothing of the stale snapshot may leak into the write.
func TestRunRetriesOnTheStoredTaskOnly(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		a, other := replica(s), replica(s)
		owner := authz.Principal{ID: "stale-owner"}
		id := startTask(t, s, a, owner)
		ask := func(rid string) tasks.Command {
			return tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{{RequestID: rid, Prompt: "ok?"}}}
		}
		// a caches the task as input_required with r1 open ...
		if _, err := a.Run(ctx, owner, id, ask("r1"), idem.Key{}); err != nil {
			t.Fatal(err)
		}
		// ... another replica answers r1: the task is working again ...
		resp := tasks.Command{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "r1", OptionID: "yes"}}, Answerer: tasks.Answerer{By: owner.ID, Via: "api"}}
		if _, err := other.Run(ctx, owner, id, resp, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		// ... and a asks again from its stale snapshot.
		reply, err := a.Run(ctx, owner, id, ask("r2"), idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		got := decodeTask(t, reply.JSON)
		if got.Revision != 4 || len(got.InputRequests) != 1 || got.InputRequests[0].RequestID != "r2" {
			t.Fatalf("after the retry: revision %d, open requests %+v; want 4 and only r2", got.Revision, got.InputRequests)
		}
		_, stored, err := other.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := decodeTask(t, stored); len(st.InputRequests) != 1 || st.InputRequests[0].RequestID != "r2" {
			t.Fatalf("stored open requests %+v; want only r2", st.InputRequests)
		}
	})
}

// The answers a channel gives together are taken in order until one is
// refused: those before it stand, those after it are not given, and the
// task is shown as the last answer taken left it.
func TestAnswerEachStopsAtTheFirstRefusal(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "each-owner"}
		id := startTask(t, s, svc, owner)
		ask := tasks.Command{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{
			{RequestID: "r1", Prompt: "first?"}, {RequestID: "r2", Prompt: "second?"},
		}}
		if _, err := svc.Run(ctx, owner, id, ask, idem.Key{}); err != nil {
			t.Fatal(err)
		}
		by := tasks.Answerer{By: owner.ID, Via: "slack", SlackUserID: "U1"}
		answer := func(rid string) tasks.TaskAnswer {
			return tasks.TaskAnswer{TaskID: id, Answer: tasks.Answer{RequestID: rid, OptionID: "yes"}}
		}

		took := svc.AnswerEach(ctx, tasks.Answerer{By: "someone-else", Via: "slack"}, []tasks.TaskAnswer{answer("r1")})
		if took.Taken != 0 || !errors.Is(took.Refused, tasks.ErrNotRequester) {
			t.Fatalf("from another principal: %+v, want none taken and ErrNotRequester", took)
		}

		took = svc.AnswerEach(ctx, by, []tasks.TaskAnswer{answer("r1"), answer("r1"), answer("r2")})
		if took.Taken != 1 || !errors.Is(took.Refused, tasks.ErrInputClosed) {
			t.Fatalf("taken %d, refused %v; want 1 taken, then ErrInputClosed", took.Taken, took.Refused)
		}
		if took.Task.TaskID != id || len(took.Task.InputRequests) != 1 || took.Task.InputRequests[0].RequestID != "r2" || len(took.Asked) != 2 {
			t.Fatalf("shown: open %+v, asked %+v; want r2 open after r1, both asked before", took.Task.InputRequests, took.Asked)
		}
		_, stored, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if st := decodeTask(t, stored); len(st.InputRequests) != 1 || st.InputRequests[0].RequestID != "r2" {
			t.Fatalf("stored open requests %+v; want r2, unanswered after the refusal", st.InputRequests)
		}
	})
}

// storedEvent is what a test reads of an event: its type, session,
// revision and the snapshot it carries (nil for none), as the bytes read.
type storedEvent struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	TaskID    string `json:"taskId"`
	Revision  int64  `json:"revision"`
	Data      struct {
		Task json.RawMessage `json:"task"`
	} `json:"data"`
}

// readAll reads a log to its end through the store, pages of size at a time.
func readAll(t *testing.T, s *store.Store, log store.Log, size int) []storedEvent {
	t.Helper()
	var out []storedEvent
	for after := ""; ; {
		page, err := s.ReadLog(context.Background(), log, after, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return out
		}
		for _, e := range page {
			var ev storedEvent
			if err := json.Unmarshal(e.JSON, &ev); err != nil {
				t.Fatalf("event %s: %v", e.JSON, err)
			}
			out = append(out, ev)
		}
		after = page[len(page)-1].ID
	}
}

// run runs cmd on the task and answers its json at the new revision, as
// the store keeps it (a reader's answer links are not in it).
func run(t *testing.T, s *store.Store, svc *tasks.Service, p authz.Principal, id string, cmd tasks.Command) []byte {
	t.Helper()
	if _, err := svc.Run(context.Background(), p, id, cmd, idem.Key{}); err != nil {
		t.Fatalf("%s: %v", cmd.Kind, err)
	}
	part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.Partitions)
	raw, err := s.GetJSON(context.Background(), s.Keys.Task(part, id))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkSnapshots checks that each task.* event of evs carries, byte for
// byte, the task as the command that made its revision answered it, and
// names that task's session.
func checkSnapshots(t *testing.T, what string, evs []storedEvent, want map[string]map[int64][]byte) {
	t.Helper()
	n := 0
	for _, e := range evs {
		if !strings.HasPrefix(e.Type, "task.") {
			continue
		}
		n++
		w, ok := want[e.TaskID][e.Revision]
		if !ok {
			t.Errorf("%s: %s at revision %d of %s: no such revision was answered", what, e.Type, e.Revision, e.TaskID)
			continue
		}
		if !bytes.Equal(e.Data.Task, w) {
			t.Errorf("%s: %s at revision %d carries\n%s\nwant\n%s", what, e.Type, e.Revision, e.Data.Task, w)
		}
		if ses := decodeTask(t, w).SessionID; e.SessionID != ses {
			t.Errorf("%s: %s at revision %d names session %q, want %q", what, e.Type, e.Revision, e.SessionID, ses)
		}
	}
	if n == 0 {
		t.Errorf("%s: no task event read", what)
	}
}

// stored is a task started on a backend of its own for a test of how its
// events are kept: the store, a replica's service, the owner, the task's
// id, partition and session, and its json at revision 1 as stored.
type stored struct {
	s     *store.Store
	svc   *tasks.Service
	owner authz.Principal
	id    string
	part  int
	ses   string
	first []byte
}

// eachStored runs fn on every backend with a task of owner's started.
func eachStored(t *testing.T, owner string, fn func(t *testing.T, st stored)) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		s := storetest.Open(t, sc, metrics.New())
		st := stored{s: s, svc: replica(s), owner: authz.Principal{ID: owner}}
		st.id = startTask(t, s, st.svc, st.owner)
		st.part, _ = ids.PartitionOf(st.id, ids.TaskPrefix, s.Partitions)
		raw, err := s.GetJSON(context.Background(), s.Keys.Task(st.part, st.id))
		if err != nil {
			t.Fatal(err)
		}
		st.first, st.ses = raw, decodeTask(t, raw).SessionID
		fn(t, st)
	})
}

// A task's events carry its snapshot at their revision when read, a task's
// log or its session's, in pages of any size; but the logs keep each event
// without it: the snapshot is stored once, in the task's record, with what
// takes it back to each revision before.
func TestEventsKeepNoSnapshotAndReadWhole(t *testing.T) {
	eachStored(t, "once-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, id, part := st.s, st.svc, st.owner, st.id, st.part
		want := map[string]map[int64][]byte{id: {1: st.first}}
		msg, other := "on it", "still on it"
		for _, cmd := range []tasks.Command{
			{Kind: tasks.CmdProgress, StatusMessage: &msg},
			{Kind: tasks.CmdRequireInput, Requests: []tasks.InputRequest{{RequestID: "r1", Prompt: "Ship it?", AllowFreeform: true}}},
			{Kind: tasks.CmdRespond, Responses: []tasks.Answer{{RequestID: "r1", Text: "yes"}}, Answerer: tasks.Answerer{By: owner.ID, Via: "api"}},
			{Kind: tasks.CmdMessage, Text: "halfway", Data: json.RawMessage(`{"pct":50}`)},
			{Kind: tasks.CmdProgress, StatusMessage: &other, Progress: json.RawMessage(`{"pct":90}`)},
			{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"shipped":true,"note":"\"quoted\" }"}`)},
		} {
			raw := run(t, s, svc, owner, id, cmd)
			want[id][decodeTask(t, raw).Revision] = raw
		}
		if len(want[id]) != 7 {
			t.Fatalf("%d revisions answered, want 7", len(want[id]))
		}
		for _, size := range []int{1, 2, 3, 100} {
			checkSnapshots(t, fmt.Sprintf("task log in pages of %d", size),
				readAll(t, s, s.Keys.TaskEvents(part, id, st.ses), size), want)
			checkSnapshots(t, fmt.Sprintf("session log in pages of %d", size),
				readAll(t, s, s.Keys.SessionEvents(part, st.ses), size), want)
		}

		entries, err := s.RDB.XRange(ctx, s.Keys.SessionLog(part, st.ses), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		kept, parts := 0, 0
		for _, e := range entries {
			if p, ok := eventPartsOf(e.Values); ok {
				if len(p) != 6 || p[2] != id {
					continue
				}
				kept++
				parts++
				for f, v := range e.Values {
					if v := fmt.Sprint(v); strings.Contains(v, `"inputResponses"`) || strings.Contains(v, st.ses) {
						t.Errorf("the session log keeps a task event with its snapshot or its session in %s: %s", f, v)
					}
				}
				if _, whole := e.Values[wholeEvent]; whole {
					t.Errorf("the session log keeps a task event as its parts and as JSON: %v", e.Values)
				}
				continue
			}
			ev, _ := e.Values[wholeEvent].(string)
			if !strings.Contains(ev, `"taskId":"`+id+`"`) {
				continue
			}
			kept++
			if strings.Contains(ev, `"inputResponses"`) {
				t.Errorf("the session log keeps an event with its snapshot: %s", ev)
			}
			if _, cut := e.Values[wholeCut]; cut {
				t.Errorf("the session log keeps a task.* event as JSON: %s", ev)
			}
		}
		if kept < 7 || parts < 7 {
			t.Errorf("the session log keeps %d events of the task, %d as their parts: want at least 7 of each", kept, parts)
		}
	})
}

// A session cancel's events read whole as well: the cancelled snapshot on
// its task.terminal, the working one still on task.created.
func TestCancelledTaskEventsReadWhole(t *testing.T) {
	eachStored(t, "cancel-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, id, part := st.s, st.svc, st.owner, st.id, st.part
		ses := sessions.NewService(sessions.Config{}, s, waits.New(waits.Config{}, nil, time.Now), time.Now)
		if _, _, err := ses.Cancel(ctx, owner, st.ses, "enough", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the task to be cancelled", func() bool {
			_, raw, err := svc.Get(ctx, owner, id)
			return err == nil && decodeTask(t, raw).Status == tasks.Cancelled
		})
		last, err := s.GetJSON(ctx, s.Keys.Task(part, id))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[int64][]byte{id: {1: st.first, decodeTask(t, last).Revision: last}}
		checkSnapshots(t, "task log", readAll(t, s, s.Keys.TaskEvents(part, id, st.ses), 10), want)
	})
}

// Events written before they were kept without their snapshot (whole, and
// no undos in the task's record) read as they were, beside the events
// written after, which read whole too.
func TestEventsWrittenWholeStillRead(t *testing.T) {
	eachStored(t, "old-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, id, part := st.s, st.svc, st.owner, st.id, st.part
		msg := "written the old way"
		want := map[string]map[int64][]byte{id: {1: st.first}}
		want[id][2] = run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg})

		// Write the session log and the task's record as they were kept
		// before: every event whole, no undos.
		slog := s.Keys.SessionLog(part, st.ses)
		whole, err := s.ReadLog(ctx, s.Keys.SessionEvents(part, st.ses), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		ttl := s.RDB.PTTL(ctx, slog).Val()
		s.RDB.Del(ctx, slog)
		for _, e := range whole {
			// The stored form has no id: it is the stream's.
			stored := bytes.Replace(e.JSON, []byte(`"id":"`+e.ID+`",`), nil, 1)
			if err := s.RDB.XAdd(ctx, &redis.XAddArgs{Stream: slog, ID: e.ID, Values: []any{"e", stored}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		s.RDB.PExpire(ctx, slog, ttl)
		storetest.RecordAsHash(t, s, s.Keys.Task(part, id))
		if err := s.RDB.HDel(ctx, s.Keys.Task(part, id), undoField+"1", undoList).Err(); err != nil {
			t.Fatal(err)
		}

		want[id][3] = run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"ok":1}`)})
		for _, size := range []int{1, 100} {
			checkSnapshots(t, "task log", readAll(t, s, s.Keys.TaskEvents(part, id, st.ses), size), want)
			evs := readAll(t, s, s.Keys.SessionEvents(part, st.ses), size)
			checkSnapshots(t, "session log", evs, want)
			if len(evs) != 4 {
				t.Errorf("the session log reads %d events, want session.created and three of the task", len(evs))
			}
		}
	})
}

// The task record's fields that keep its undos (store/writes.go): a field
// each, as every undo was kept before, and the list of the first ones.
const undoField, undoList = "u:", "u"

// A task's undos are kept in one field of its hash up to a number, and in a
// field each after that, as every undo was kept before; a task whose
// undos are kept either way, or both, reads every revision whole, through
// a read of every type and through one of some types.
func TestUndosReadWhereverKept(t *testing.T) {
	eachStored(t, "undo-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, id, part := st.s, st.svc, st.owner, st.id, st.part
		rec := s.Keys.Task(part, id)
		want := map[string]map[int64][]byte{id: {1: st.first}}
		progress := func(n int) {
			for range n {
				msg := fmt.Sprintf("step %d", len(want[id]))
				raw := run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg})
				want[id][decodeTask(t, raw).Revision] = raw
			}
		}
		check := func(what string) {
			t.Helper()
			for _, size := range []int{1, 7, 100} {
				checkSnapshots(t, fmt.Sprintf("%s: task log in pages of %d", what, size),
					readAll(t, s, s.Keys.TaskEvents(part, id, st.ses), size), want)
				checkSnapshots(t, fmt.Sprintf("%s: session log in pages of %d", what, size),
					readAll(t, s, s.Keys.SessionEvents(part, st.ses), size), want)
			}
			var evs []storedEvent
			for after := ""; ; {
				page, err := s.Source(s.Keys.SessionEvents(part, st.ses)).ReadLog(ctx, after, 10, waits.Kinds{"task.progress"})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Entries {
					var ev storedEvent
					if err := json.Unmarshal(e.JSON, &ev); err != nil {
						t.Fatal(err)
					}
					evs = append(evs, ev)
				}
				if page.Last == "" || page.Last == after {
					break
				}
				after = page.Last
			}
			checkSnapshots(t, what+": task.progress only", evs, want)
			if len(evs) != len(want[id])-1 {
				t.Errorf("%s: %d task.progress events read, want %d", what, len(evs), len(want[id])-1)
			}
		}
		fields := func() []string {
			var undos []string
			for _, k := range storetest.RecordNames(t, s, rec) {
				if strings.HasPrefix(k, undoField) || k == undoList {
					undos = append(undos, k)
				}
			}
			slices.Sort(undos)
			return undos
		}

		progress(70)
		check("kept in one field, then a field each")
		if got := fields(); len(got) != 1+70-64 || !slices.Contains(got, undoList) ||
			!slices.Contains(got, undoField+"65") || slices.Contains(got, undoField+"64") {
			t.Errorf("the undos of 71 revisions are kept in %q, want the first 64 in %q and the rest a field each",
				got, undoList)
		}

		// Keep every undo as an older version did, in its hash, a field
		// each, and go on.
		storetest.RecordAsHash(t, s, rec)
		list, err := s.RDB.HGet(ctx, rec, undoList).Result()
		if err != nil {
			t.Fatal(err)
		}
		undos := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
		if len(undos) != 64 {
			t.Fatalf("the list keeps %d undos, want 64", len(undos))
		}
		for i, u := range undos {
			if err := s.RDB.HSet(ctx, rec, undoField+strconv.Itoa(i+1), u).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RDB.HDel(ctx, rec, undoList).Err(); err != nil {
			t.Fatal(err)
		}
		check("a field each, as kept before")
		progress(2)
		check("a field each, as kept before, and after")
		if got := fields(); slices.Contains(got, undoList) || len(got) != 72 {
			t.Errorf("a task that kept its undos a field each keeps them in %q", got)
		}
	})
}

// The field of a session log entry that keeps a task event as its parts,
// and the byte that ends each part (store/writes.go), and the fields of one
// that keeps an event's JSON.
const (
	eventParts, partSep  = "p", "\x01"
	wholeEvent, wholeCut = "e", "c"
)

// eventPartsOf is a task event's parts as a session log entry keeps them:
// type, "at", task id, revision, data before the snapshot, what follows it.
func eventPartsOf(values map[string]any) ([]string, bool) {
	p, ok := values[eventParts].(string)
	if !ok {
		return nil, false
	}
	return strings.SplitN(p, partSep, 6), true
}

// cutEvent is the event of a session log entry as the JSON the store kept
// before task events were kept as their parts: the head with the snapshot
// cut out, and where it was cut (-1 for an event kept whole).
func cutEvent(t *testing.T, values map[string]any) (string, int) {
	t.Helper()
	if p, ok := eventPartsOf(values); ok {
		data := p[4]
		if data == "" {
			data = `{"task":`
		}
		head := fmt.Sprintf(`{"type":"%s","at":"%s","taskId":"%s","revision":%s,"data":%s`, p[0], p[1], p[2], p[3], data)
		return head + p[5], len(head)
	}
	ev, _ := values[wholeEvent].(string)
	cut, ok := values[wholeCut].(string)
	if !ok {
		return ev, -1
	}
	n, err := strconv.Atoi(cut)
	if err != nil {
		t.Fatalf("an event %s cut at %q", ev, cut)
	}
	return ev, n
}

// Events kept as an older version kept them read as they did: their JSON
// with the snapshot cut out, and before that with the session in their
// head besides, the session named once.
func TestEventsKeptAsJSONStillRead(t *testing.T) {
	eachStored(t, "session-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, id, part := st.s, st.svc, st.owner, st.id, st.part
		msg := "kept with its session"
		run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg})
		run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"ok":1}`)})
		before, err := s.ReadLog(ctx, s.Keys.SessionEvents(part, st.ses), "", 100)
		if err != nil {
			t.Fatal(err)
		}

		for _, withSession := range []bool{false, true} {
			// Write each task event as JSON with its snapshot cut out,
			// then with the session put back into its head, where the
			// events were written with it, and the cut moved to match.
			slog := s.Keys.SessionLog(part, st.ses)
			entries, err := s.RDB.XRange(ctx, slog, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			ttl := s.RDB.PTTL(ctx, slog).Val()
			s.RDB.Del(ctx, slog)
			rewritten := 0
			for _, e := range entries {
				ev, cut := cutEvent(t, e.Values)
				values := []any{wholeEvent, ev}
				if cut >= 0 {
					if withSession {
						at := strings.Index(ev, `,"taskId":`)
						insert := `,"sessionId":"` + st.ses + `"`
						ev, cut = ev[:at]+insert+ev[at:], cut+len(insert)
					}
					values = []any{wholeEvent, ev, wholeCut, strconv.Itoa(cut)}
					rewritten++
				}
				if err := s.RDB.XAdd(ctx, &redis.XAddArgs{Stream: slog, ID: e.ID, Values: values}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			s.RDB.PExpire(ctx, slog, ttl)
			if rewritten != 3 {
				t.Fatalf("%d cut events rewritten, want the task's 3", rewritten)
			}

			for _, log := range []store.Log{s.Keys.SessionEvents(part, st.ses), s.Keys.TaskEvents(part, id, st.ses)} {
				after, err := s.ReadLog(ctx, log, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range after {
					i := slices.IndexFunc(before, func(b waits.LogEntry) bool { return b.ID == e.ID })
					if i < 0 || !bytes.Equal(before[i].JSON, e.JSON) {
						t.Errorf("with the session %v: event %s reads\n%s\nwant\n%s", withSession, e.ID, e.JSON, before[max(i, 0)].JSON)
					}
				}
				if len(after) < 3 {
					t.Errorf("%d events read, want at least the task's 3", len(after))
				}
			}
		}
	})
}

// A task that is gone (expired) takes its events with it: a session log
// read passes over them and answers the rest.
func TestEventsOfAGoneTaskAreGone(t *testing.T) {
	eachStored(t, "gone-owner", func(t *testing.T, st stored) {
		ctx := context.Background()
		s, svc, owner, gone, part := st.s, st.svc, st.owner, st.id, st.part
		kept, err := svc.Create(ctx, owner, tasks.CreateInput{SessionID: st.ses}, idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		stays := decodeTask(t, kept.JSON).TaskID
		s.RDB.Del(ctx, s.Keys.Task(part, gone))
		for _, size := range []int{1, 100} {
			evs := readAll(t, s, s.Keys.SessionEvents(part, st.ses), size)
			var seen []string
			for _, e := range evs {
				seen = append(seen, e.Type+" "+e.TaskID)
			}
			if len(evs) != 2 || evs[0].Type != "session.created" || evs[1].TaskID != stays {
				t.Errorf("pages of %d: the session log reads %v, want session.created and %s's task.created", size, seen, stays)
			}
		}
	})
}
