package store

import (
	"context"

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
// log's end.
var parseLogReadKinds = replies[waits.LogRead]{
	"ok": func(r scriptReply) (waits.LogRead, error) {
		out := waits.LogRead{Last: r.str(1), More: r.str(2) == "1"}
		for i := 3; i+1 < len(r); i += 2 {
			id := r.str(i)
			out.Entries = append(out.Entries, waits.LogEntry{ID: id, JSON: withID(id, r.str(i+1))})
		}
		return out, nil
	},
}.parser("log_read_kinds")

// readLogKinds reads up to limit events of kinds after the stream id after
// ("" or "0" for the beginning), looking at a bounded part of the log: last
// is the id of the last entry it looked at, and more says it stopped before
// the log's end.
func (s *Store) readLogKinds(ctx context.Context, log Log, after string, limit int, kinds waits.Kinds) (waits.LogRead, error) {
	start, err := logStart(after)
	if err != nil {
		return waits.LogRead{}, err
	}
	args := []any{start, limit, kindsScanEntries, kindsScanBytes}
	for _, k := range kinds {
		args = append(args, k)
	}
	keys := []string{log.Key}
	if log.Session != "" {
		keys = append(keys, log.Session)
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
