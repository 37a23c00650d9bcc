package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// storedEvent is what a test reads of an event: its type, revision and
// the snapshot it carries (nil for none), as the bytes read.
type storedEvent struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	TaskID   string `json:"taskId"`
	Revision int64  `json:"revision"`
	Data     struct {
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
// byte, the task as the command that made its revision answered it.
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
	}
	if n == 0 {
		t.Errorf("%s: no task event read", what)
	}
}

// A task's events carry its snapshot at their revision when read, a task's
// log or its session's, in pages of any size; but the logs keep each event
// without it: the snapshot is stored once, in the task's record, with what
// takes it back to each revision before.
func TestEventsKeepNoSnapshotAndReadWhole(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "once-owner"}
		id := startTask(t, s, svc, owner)
		part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.Partitions)
		_, first, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		task := decodeTask(t, first)
		want := map[string]map[int64][]byte{id: {1: first}}
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
				readAll(t, s, s.Keys.TaskEvents(part, id, task.SessionID), size), want)
			checkSnapshots(t, fmt.Sprintf("session log in pages of %d", size),
				readAll(t, s, s.Keys.SessionEvents(part, task.SessionID), size), want)
		}

		entries, err := s.RDB.XRange(ctx, s.Keys.SessionLog(part, task.SessionID), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, e := range entries {
			ev, _ := e.Values["e"].(string)
			if !strings.Contains(ev, `"taskId":"`+id+`"`) {
				continue
			}
			kept++
			if strings.Contains(ev, `"taskId":"`+id+`","sessionId"`) || strings.Contains(ev, `"inputResponses"`) {
				t.Errorf("the session log keeps an event with its snapshot: %s", ev)
			}
		}
		if kept < 7 {
			t.Errorf("the session log keeps %d events of the task, want at least 7", kept)
		}
	})
}

// A session cancel's events read whole as well: the cancelled snapshot on
// its task.terminal, the working one still on task.created.
func TestCancelledTaskEventsReadWhole(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "cancel-owner"}
		id := startTask(t, s, svc, owner)
		part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.Partitions)
		_, first, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		task := decodeTask(t, first)
		ses := sessions.NewService(sessions.Config{}, s, waits.New(waits.Config{}, nil, time.Now), time.Now)
		if _, _, err := ses.Cancel(ctx, owner, task.SessionID, "enough", idem.Key{}); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the task to be cancelled", func() bool {
			_, raw, err := svc.Get(ctx, owner, id)
			return err == nil && decodeTask(t, raw).Status == tasks.Cancelled
		})
		_, last, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]map[int64][]byte{id: {1: first, decodeTask(t, last).Revision: last}}
		checkSnapshots(t, "task log", readAll(t, s, s.Keys.TaskEvents(part, id, task.SessionID), 10), want)
	})
}

// Events written before they were kept without their snapshot (whole, and
// no undos in the task's record) read as they were, beside the events
// written after, which read whole too.
func TestEventsWrittenWholeStillRead(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "old-owner"}
		id := startTask(t, s, svc, owner)
		part, _ := ids.PartitionOf(id, ids.TaskPrefix, s.Partitions)
		_, first, err := svc.Get(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		task := decodeTask(t, first)
		msg := "written the old way"
		want := map[string]map[int64][]byte{id: {1: first}}
		want[id][2] = run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdProgress, StatusMessage: &msg})

		// Write the session log and the task's record as they were kept
		// before: every event whole, no undos.
		slog := s.Keys.SessionLog(part, task.SessionID)
		whole, err := s.ReadLog(ctx, s.Keys.SessionEvents(part, task.SessionID), "", 100)
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
		if err := s.RDB.HDel(ctx, s.Keys.Task(part, id), "u:1").Err(); err != nil {
			t.Fatal(err)
		}

		want[id][3] = run(t, s, svc, owner, id, tasks.Command{Kind: tasks.CmdComplete, Result: json.RawMessage(`{"ok":1}`)})
		for _, size := range []int{1, 100} {
			checkSnapshots(t, "task log", readAll(t, s, s.Keys.TaskEvents(part, id, task.SessionID), size), want)
			evs := readAll(t, s, s.Keys.SessionEvents(part, task.SessionID), size)
			checkSnapshots(t, "session log", evs, want)
			if len(evs) != 4 {
				t.Errorf("the session log reads %d events, want session.created and three of the task", len(evs))
			}
		}
	})
}

// A task that is gone (expired) takes its events with it: a session log
// read passes over them and answers the rest.
func TestEventsOfAGoneTaskAreGone(t *testing.T) {
	t.Parallel()
	storetest.EachBackend(t, func(t *testing.T, sc store.Config) {
		ctx := context.Background()
		s := storetest.Open(t, sc, metrics.New())
		svc := replica(s)
		owner := authz.Principal{ID: "gone-owner"}
		gone := startTask(t, s, svc, owner)
		_, raw, err := svc.Get(ctx, owner, gone)
		if err != nil {
			t.Fatal(err)
		}
		task := decodeTask(t, raw)
		part, _ := ids.PartitionOf(gone, ids.TaskPrefix, s.Partitions)
		kept, err := svc.Create(ctx, owner, tasks.CreateInput{SessionID: task.SessionID}, idem.Key{})
		if err != nil {
			t.Fatal(err)
		}
		stays := decodeTask(t, kept.JSON).TaskID
		s.RDB.Del(ctx, s.Keys.Task(part, gone))
		for _, size := range []int{1, 100} {
			evs := readAll(t, s, s.Keys.SessionEvents(part, task.SessionID), size)
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
