package store

import (
	"context"
	"strconv"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/snapdelta"
	"github.com/taskhook/taskhook/waits"
)

// Bounds of one kinds script's look at a log: whatever the log holds, a
// script looks at most at this many entries and bytes, and the caller goes
// on in another.
const (
	kindsScanEntries = 1024
	kindsScanBytes   = 8 << 20
)

// parseLogReadKinds reads log_read_kinds's answer: the entries, the id of
// the last entry looked at ("" when none), and whether it stopped before the
// log's end. Each event kept without its snapshot gets it back here, from
// its task's json and undos; an event of a task that is gone is gone with it.
var parseLogReadKinds = replies[waits.LogRead]{
	"ok": func(r scriptReply) (waits.LogRead, error) {
		out := waits.LogRead{Last: r.str(1), More: r.str(2) == "1"}
		n := int(r.int(3))
		joins := r.joins(4 + 3*n)
		for i := 4; i < 4+3*n; i += 3 {
			id, ev := r.str(i), r.str(i+1)
			if cut := r.str(i + 2); cut == "" {
				out.Entries = append(out.Entries, waits.LogEntry{ID: id, JSON: withID(id, ev)})
			} else if b, ok := joins.whole(id, ev, cut); ok {
				out.Entries = append(out.Entries, waits.LogEntry{ID: id, JSON: b})
			}
		}
		return out, nil
	},
}.parser("log_read_kinds")

// joins are the tasks log_read_kinds answered to put the snapshots back
// into the events it kept, by task id.
type joins map[string]*taskRevisions

// taskRevisions is a task's current json and revision, its undos from the
// lowest revision a kept event shows (from on), and the snapshots worked
// out so far, by revision: the current one, then, once back is set, every
// one the undos reach.
type taskRevisions struct {
	rev   int64
	from  int64
	undos []string
	snaps map[int64][]byte
	back  bool // the undos were applied (or found unusable): no revision below is worked out again
}

// joins reads the join section of log_read_kinds's answer, from member i.
func (r scriptReply) joins(i int) joins {
	j := joins{}
	for i+3 < len(r) {
		task, rev, json, n := r.str(i), r.int(i+1), r.str(i+2), int(r.int(i+3))
		i += 4
		if rev > 0 {
			t := &taskRevisions{rev: rev, from: rev - int64(n), snaps: map[int64][]byte{rev: []byte(json)}}
			for k := range n {
				t.undos = append(t.undos, r.str(i+k))
			}
			j[task] = t
		}
		i += n
	}
	return j
}

// whole is the event ev (cut at cut) with its task's snapshot put back
// and its stream id first, as withID writes it: the snapshot at the
// event's revision, worked back from the current one. ok is false when the
// task is gone or its undos do not reach back that far.
func (j joins) whole(id, ev, cut string) ([]byte, bool) {
	at, err := strconv.Atoi(cut)
	task, rev, ok := events.HeadTask(ev)
	if err != nil || !ok || at < 1 || at > len(ev) {
		return nil, false
	}
	t := j[task]
	if t == nil {
		return nil, false
	}
	snap, ok := t.at(rev)
	if !ok {
		return nil, false
	}
	b := make([]byte, 0, len(ev)+len(snap)+len(id)+64)
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `",`...)
	return events.AppendJoined(b, ev, at, snap, rev < t.rev), true
}

// at is the task's snapshot at revision rev. The first revision asked for
// below the current one works back to the lowest the undos reach, once.
func (t *taskRevisions) at(rev int64) ([]byte, bool) {
	if s, ok := t.snaps[rev]; ok || rev >= t.rev || rev < t.from || t.back {
		return s, ok
	}
	t.back = true
	// undos[k] takes revision from+k+1 back to from+k: newest first from here.
	var undos [][]byte
	for k := int64(len(t.undos)) - 1; k >= 0 && t.undos[k] != ""; k-- {
		undos = append(undos, []byte(t.undos[k]))
	}
	back, err := snapdelta.Back(t.snaps[t.rev], undos)
	if err != nil {
		return nil, false
	}
	for k, s := range back {
		t.snaps[t.rev-1-int64(k)] = s
	}
	s, ok := t.snaps[rev]
	return s, ok
}

// readLogKinds reads up to limit events of kinds after the stream id after
// ("" or "0" for the beginning), looking at a bounded part of the log: last
// is the id of the last entry it looked at, and more says it stopped before
// the log's end.
func (s *Store) readLogKinds(ctx context.Context, log Log, after string, limit int, kinds waits.Kinds) (waits.LogRead, error) {
	start, err := logStart(after)
	if err != nil {
		return waits.LogRead{}, err
	}
	args := []any{start, limit, kindsScanEntries, kindsScanBytes, log.Tasks}
	for _, k := range kinds {
		args = append(args, k)
	}
	keys := []string{log.Key}
	if log.Session != "" {
		keys = append(keys, log.Session, log.Record)
	}
	return s.scripts.logReadKinds.run(ctx, s, keys, args...)
}

// kindsAfter is task_kinds_after's answer.
type kindsAfter struct {
	found bool
	task  []byte
	more  string // where to go on looking back from; "" when the answer is known
}

var parseTaskKindsAfter = replies[kindsAfter]{
	"found": func(r scriptReply) (kindsAfter, error) { return kindsAfter{found: true, task: []byte(r.str(1))}, nil },
	"none":  func(r scriptReply) (kindsAfter, error) { return kindsAfter{task: []byte(r.str(1))}, nil },
	"more": func(r scriptReply) (kindsAfter, error) {
		return kindsAfter{task: []byte(r.str(1)), more: r.str(2)}, nil
	},
	"not_found": func(scriptReply) (kindsAfter, error) { return kindsAfter{}, ErrNotFound },
}.parser("task_kinds_after")

// TaskKindsAfter reports whether the task's log holds an event of kinds
// after revision rev, and reads the task: for a long-poll that wakes on
// kinds only. It costs one round trip unless the log holds more after rev
// than one script looks at. Without a find the task is as the first look
// saw it, so every event up to its revision was looked at; ErrNotFound
// when there is none.
func (s *Store) TaskKindsAfter(ctx context.Context, p int, id, sessionID string, rev int64, kinds waits.Kinds) (bool, []byte, error) {
	keys := []string{s.Keys.Task(p, id), s.Keys.TaskLog(p, id), s.Keys.SessionLog(p, sessionID)}
	from := "+"
	var task []byte
	for {
		args := []any{rev, from, kindsScanEntries, kindsScanBytes}
		for _, k := range kinds {
			args = append(args, k)
		}
		r, err := s.scripts.taskKindsAfter.run(ctx, s, keys, args...)
		if err != nil {
			return false, nil, err
		}
		if task == nil {
			task = r.task
		}
		if r.found {
			return true, r.task, nil
		}
		if r.more == "" {
			return false, task, nil
		}
		from = "(" + r.more
	}
}
