package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/waits"
)

// GetJSON reads the json field of a record (a task or a session).
func (s *Store) GetJSON(ctx context.Context, key string) ([]byte, error) {
	items, found, err := s.readJSONs(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	if !found[0] {
		return nil, ErrNotFound
	}
	return items[0], nil
}

// Decode decodes a record as a read answered it, raw and err being the
// read's answer: a record the read did not find is problem.ErrNotFound, a
// failed read is its error, and a record that does not decode is an error
// naming what it holds.
func Decode[T any](what string, raw []byte, err error) (T, error) {
	var v T
	if errors.Is(err, ErrNotFound) {
		return v, problem.ErrNotFound
	}
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}

// ReadLog returns up to limit events after the stream id after ("" or "0"
// for the beginning), oldest first. A page may end short of limit (a task's
// log of large events, kindsScanBytes; events of tasks that are gone), but
// is empty only at the log's end.
func (s *Store) ReadLog(ctx context.Context, log Log, after string, limit int) ([]waits.LogEntry, error) {
	r, err := s.readAll(ctx, log, after, limit)
	return r.Entries, err
}

// readAll reads up to limit events of every type after the stream id after:
// a session's log as readSessionLog reads it, a task's through
// log_read_kinds, answered up to its last event and never More.
func (s *Store) readAll(ctx context.Context, log Log, after string, limit int) (waits.LogRead, error) {
	if log.Session == "" {
		return s.readSessionLog(ctx, log, after, limit)
	}
	r, err := s.readLogKinds(ctx, log, after, limit, nil)
	if err != nil {
		return waits.LogRead{}, err
	}
	out := waits.LogRead{Entries: r.Entries}
	if n := len(r.Entries); n > 0 {
		out.Last = r.Entries[n-1].ID
	}
	return out, nil
}

// readSessionLog reads a session's log: up to limit entries as XRANGE
// answers them, then, in one more round trip, what puts their snapshots
// back into the events cut from a task (joinCut). An event of a task that
// is gone is passed over; Last is the last entry looked at. The entries go
// from Redis to the replica as they are stored: no script walks them.
func (s *Store) readSessionLog(ctx context.Context, log Log, after string, limit int) (waits.LogRead, error) {
	start, err := logStart(after)
	if err != nil {
		return waits.LogRead{}, err
	}
	for {
		msgs, err := s.RDB.XRangeN(ctx, log.Key, start, "+", int64(limit)).Result()
		if err != nil {
			return waits.LogRead{}, unavailable(err)
		}
		evs := make([]cutEvent, len(msgs))
		for i, m := range msgs {
			evs[i].ev, evs[i].cut = storedEvent(m.Values)
		}
		j, err := s.joinCut(ctx, log.Tasks, evs)
		if err != nil {
			return waits.LogRead{}, err
		}
		out := waits.LogRead{Entries: make([]waits.LogEntry, 0, len(msgs))}
		for i, m := range msgs {
			out.Last = m.ID
			e, cut := evs[i].ev, evs[i].cut
			if cut == "" {
				out.Entries = append(out.Entries, waits.LogEntry{ID: m.ID, JSON: withID(m.ID, e)})
			} else if b, ok := j.whole(m.ID, e, cut); ok {
				out.Entries = append(out.Entries, waits.LogEntry{ID: m.ID, JSON: b})
			}
		}
		if len(out.Entries) > 0 || len(msgs) < limit {
			return out, nil
		}
		start = "(" + out.Last
	}
}

// undoLookahead is how many revisions past the newest one a page shows
// joinCut reads undos for in its first round trip: a task that has moved
// further on since costs one more. Most pages are read as the log grows,
// their tasks at most a revision or two ahead.
const undoLookahead = 2

// joinCut reads what puts the snapshots back into the events of evs cut
// from a task: each such task's revision, json and undos, in one pipelined
// round trip (two for a task that has moved on more than undoLookahead
// revisions past the page). tasks is the key of a task record but its id.
func (s *Store) joinCut(ctx context.Context, tasks string, evs []cutEvent) (joins, error) {
	type span struct{ lo, hi int64 }
	spans := map[string]*span{}
	var order []string
	for _, e := range evs {
		if e.cut == "" {
			continue
		}
		task, rev, ok := events.HeadTask(e.ev)
		if !ok {
			continue
		}
		if sp := spans[task]; sp == nil {
			spans[task] = &span{rev, rev}
			order = append(order, task)
		} else {
			sp.lo, sp.hi = min(sp.lo, rev), max(sp.hi, rev)
		}
	}
	j := joins{}
	if len(order) == 0 {
		return j, nil
	}
	undoFields := func(lo, hi int64) []string {
		f := make([]string, 0, hi-lo)
		for r := lo; r < hi; r++ {
			f = append(f, taskFieldUndo+strconv.FormatInt(r, 10))
		}
		return f
	}
	keys, names := make([]string, len(order)), make([][]string, len(order))
	for i, task := range order {
		sp := spans[task]
		keys[i] = tasks + task
		names[i] = append([]string{"rev", "json", taskFieldUndos}, undoFields(sp.lo, sp.hi+undoLookahead)...)
	}
	vals, err := s.readRecords(ctx, keys, names)
	if err != nil {
		return nil, err
	}
	var further []string
	for i, task := range order {
		v := vals[i]
		revText, _ := v[0].(string)
		rev, err := strconv.ParseInt(revText, 10, 64)
		if err != nil {
			continue // gone
		}
		json, _ := v[1].(string)
		list, _ := v[2].(string)
		inList := strings.Split(list, "\n") // each undo is ended by a newline: the last is not one
		sp := spans[task]
		t := &taskRevisions{rev: rev, from: sp.lo, snaps: map[int64][]byte{rev: []byte(json)}}
		// The undo of revision r is the list's r-th while the list reaches
		// it, else the field of its own read beside the list (none: "");
		// one not read yet is read in a second round trip.
		for r := sp.lo; r < rev; r++ {
			if r <= int64(len(inList)-1) {
				t.undos = append(t.undos, inList[r-1])
				continue
			}
			k := r - sp.lo + 3
			if k >= int64(len(v)) {
				break
			}
			undo, _ := v[k].(string)
			t.undos = append(t.undos, undo)
		}
		j[task] = t
		if int64(len(t.undos)) < rev-sp.lo {
			further = append(further, task)
		}
	}
	if len(further) > 0 {
		keys, names := make([]string, len(further)), make([][]string, len(further))
		for i, task := range further {
			t := j[task]
			keys[i], names[i] = tasks+task, undoFields(t.from+int64(len(t.undos)), t.rev)
		}
		more, err := s.readRecords(ctx, keys, names)
		if err != nil {
			return nil, err
		}
		for i, task := range further {
			for _, u := range more[i] {
				undo, _ := u.(string)
				j[task].undos = append(j[task].undos, undo)
			}
		}
	}
	return j, nil
}

// cutEvent is a stored event as storedEvent reads it.
type cutEvent struct{ ev, cut string }

// storedEvent is the event of a log entry (values: its fields) as the
// script that appended it was given it: its JSON, cut or whole, and the
// offset it was cut at ("" when it was not). An event kept as its parts
// (eventFieldParts; see the prelude's append_event) has its head written
// again, the bytes it had.
func storedEvent(values map[string]any) (ev, cut string) {
	parts, ok := values[eventFieldParts].(string)
	if !ok {
		ev, _ = values["e"].(string)
		cut, _ = values[eventFieldCut].(string)
		return ev, cut
	}
	var p [5]string
	for i := range p {
		p[i], parts, _ = strings.Cut(parts, eventPartSep)
	}
	typ, at, task, rev, data := p[0], p[1], p[2], p[3], p[4]
	if data == "" {
		data = eventTaskData
	}
	var b strings.Builder
	b.Grow(len(typ) + len(at) + len(task) + len(rev) + len(data) + len(parts) + 48)
	for _, s := range []string{`{"type":"`, typ, `","at":"`, at, `","taskId":"`, task, `","revision":`, rev, `,"data":`, data} {
		b.WriteString(s)
	}
	head := b.Len()
	b.WriteString(parts)
	return b.String(), strconv.Itoa(head)
}

// LogSource is one event log as the registry's reads that wait read it
// (waits.LogSource): a read of every type is ReadLog's, one of some kinds
// log_read_kinds's, bounded in what it looks at.
type LogSource struct {
	s   *Store
	log Log
}

var _ waits.LogSource = LogSource{}

// Source is log, to read through the registry (waits.Waiters' ReadLog and
// PollLog).
func (s *Store) Source(log Log) LogSource { return LogSource{s: s, log: log} }

// ReadLog reads up to limit events of kinds after the stream id after (a
// read of every type as readAll reads it).
func (l LogSource) ReadLog(ctx context.Context, after string, limit int, kinds waits.Kinds) (waits.LogRead, error) {
	if !kinds.All() {
		return l.s.readLogKinds(ctx, l.log, after, limit, kinds)
	}
	return l.s.readAll(ctx, l.log, after, limit)
}

// logStart is where a read after the cursor after begins: the log's start
// for "" and "0", else the smallest id above after.
func logStart(after string) (string, error) {
	if after == "" || after == "0" {
		return "-", nil
	}
	return nextStreamID(after)
}

// nextStreamID is the smallest stream id after id; an id that does not read
// as one is a cursor the service did not hand out.
func nextStreamID(id string) (string, error) {
	next, err := ids.NextEventID(id)
	if err != nil {
		return "", problem.ErrBadCursor
	}
	return next, nil
}

// EventWithID is a stored event's JSON with its stream id as "id", as every
// read and every notification shows it.
func EventWithID(id string, event []byte) []byte { return withID(id, string(event)) }

// withID puts "id" first into a stored event object.
func withID(id, event string) []byte {
	if len(event) < 2 || event[0] != '{' {
		return []byte(event)
	}
	b := make([]byte, 0, len(event)+len(id)+8)
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, '"')
	if event != "{}" {
		b = append(b, ',')
	}
	return append(b, event[1:]...)
}

// ListFilter decides which indexed records a list keeps by a few small
// fields of each record's hash, read before (and instead of) the record's
// json: a filter costs the same whatever the records' size. Keep gets the
// values of Fields in order ("" for a missing one).
type ListFilter struct {
	Fields []string
	Keep   func(vals []string) bool
	// SizeField, when set, is the hash field a kept record's size is read
	// from (HSTRLEN, before the record is; a task record's size is the
	// string's, STRLEN, and its Fields are read from its head: see
	// readHeads): a page holds at most
	// maxPageBytes of them, and they are loaded at most loadChunkBytes a
	// round trip.
	SizeField string
}

// A page of large records stops short at maxPageBytes (always holding at
// least one record) with a cursor to go on, and its records come from Redis
// in round trips of at most loadChunkBytes: a list of large tasks neither
// holds Redis for one long reply nor costs a replica more per call than a
// page of small ones, whoever else shares them.
const (
	maxPageBytes   = 1 << 20
	loadChunkBytes = 256 << 10
)

// maxListScan bounds the index entries one list call examines: a filter that
// rejects most entries answers a short (even empty) page with a cursor to go
// on, instead of reading on without bound.
const maxListScan = 1000

// ListIndexed pages through sorted-set indexes (one per partition, scored by
// creation time) newest first, keeps the records the filter accepts and
// loads their json. It reads in batches and examines at most maxListScan
// index entries per call; when it stops early, Next says where to go on.
func (s *Store) ListIndexed(ctx context.Context, indexes []string, record func(id string) string,
	after *paging.Position, limit int, f ListFilter) (paging.Page, error) {
	// An expired record leaves its index entry behind: not found.
	load := func(ctx context.Context, ids []string) ([][]byte, []bool, error) {
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = record(id)
		}
		return s.readJSONs(ctx, keys)
	}
	f.SizeField = "json"
	items, next, err := listIndexed(ctx, s, indexes, record, after, limit, f, load)
	return paging.Page{Items: items, Next: next.Cursor()}, err
}

// onePartition tells whether keys all have the same hash tag, the
// partition's, which puts them on one Redis node.
func onePartition(keys []string) bool {
	tag := func(k string) string {
		_, rest, _ := strings.Cut(k, "{")
		t, _, _ := strings.Cut(rest, "}")
		return t
	}
	for _, k := range keys[1:] {
		if tag(k) != tag(keys[0]) {
			return false
		}
	}
	return true
}

// listIndexed is ListIndexed with the loading of the kept records given:
// load reads the records of ids in one round trip, and says which exist.
func listIndexed[T any](ctx context.Context, s *Store, indexes []string, record func(id string) string,
	after *paging.Position, limit int, f ListFilter, load func(ctx context.Context, ids []string) ([]T, []bool, error)) ([]T, *paging.Position, error) {
	type item struct {
		score int64
		id    string
	}
	var page []T
	var pageBytes int64
	pos := after
	scanned := 0
	for len(page) < limit {
		if scanned >= maxListScan {
			return page, pos, nil
		}
		batch := limit - len(page) + 8
		max := "+inf"
		if pos != nil {
			max = strconv.FormatInt(pos.Score, 10)
		}
		count := int64(batch + 64)
		fetch := func(pipe redis.Cmdable, ix string, offset int64) *redis.ZSliceCmd {
			return pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
				Key: ix, Start: max, Stop: indexFloor, ByScore: true, Rev: true, Offset: offset, Count: count,
			})
		}
		// Indexes of one partition are read in one transaction: a task
		// that moves from one of them to another in between (a session's
		// indexes by status) is then met once, not missed.
		pipe := s.RDB.Pipeline()
		if len(indexes) > 1 && onePartition(indexes) {
			pipe = s.RDB.TxPipeline()
		}
		cmds := make([]*redis.ZSliceCmd, len(indexes))
		for i, ix := range indexes {
			cmds[i] = fetch(pipe, ix, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, unavailable(err)
		}
		var items []item
		more := false // some index holds entries past what was read
		for i, c := range cmds {
			// The read starts at pos's score, inclusive: entries of that
			// score at or before pos are skipped. When more of them share
			// the score than one read holds, read on past them.
			for offset := int64(0); ; {
				zs := c.Val()
				n := len(items)
				for _, z := range zs {
					it := item{score: int64(z.Score), id: z.Member.(string)}
					if pos != nil && (it.score > pos.Score || (it.score == pos.Score && it.id >= pos.ID)) {
						continue
					}
					items = append(items, it)
				}
				full := int64(len(zs)) == count
				if !full || len(items) > n {
					more = more || full
					break
				}
				offset += count
				c = fetch(s.RDB, indexes[i], offset)
				if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
					return nil, nil, unavailable(err)
				}
			}
		}
		if len(items) == 0 {
			return page, nil, nil
		}
		sort.Slice(items, func(i, j int) bool {
			if items[i].score != items[j].score {
				return items[i].score > items[j].score
			}
			return items[i].id > items[j].id
		})
		items = slices.Compact(items) // one in two of the indexes read is one item
		if len(items) > batch {
			items, more = items[:batch], true
		}
		scanned += len(items)
		keep := make([]bool, len(items))
		sizes := make([]int64, len(items))
		if len(f.Fields) > 0 || f.SizeField != "" {
			keys := make([]string, len(items))
			for i, it := range items {
				keys[i] = record(it.id)
			}
			fields, lens, err := s.readHeads(ctx, keys, f.Fields, f.SizeField)
			if err != nil {
				return nil, nil, err
			}
			for i := range items {
				keep[i] = true
				if len(f.Fields) > 0 {
					vals := make([]string, len(f.Fields))
					for j, v := range fields[i] {
						vals[j], _ = v.(string)
					}
					keep[i] = f.Keep(vals)
				}
			}
			sizes = lens
		} else {
			for i := range keep {
				keep[i] = true
			}
		}
		var kept []string
		var keptSizes []int64
		loaded := make([]int, len(items)) // index into the loaded records, -1 when not kept
		end, full := len(items), false
		for i, it := range items {
			loaded[i] = -1
			if !keep[i] {
				continue
			}
			if len(page)+len(kept) > 0 && pageBytes+sizes[i] > maxPageBytes {
				end, full = i, true
				break
			}
			pageBytes += sizes[i]
			loaded[i] = len(kept)
			kept = append(kept, it.id)
			keptSizes = append(keptSizes, sizes[i])
		}
		records, found, err := loadChunks(ctx, kept, keptSizes, load)
		if err != nil {
			return nil, nil, err
		}
		for i := range items[:end] {
			pos = &paging.Position{Score: items[i].score, ID: items[i].id}
			j := loaded[i]
			if j < 0 || !found[j] {
				continue
			}
			page = append(page, records[j])
			if len(page) == limit {
				var next *paging.Position
				if i < len(items)-1 || more {
					next = pos
				}
				return page, next, nil
			}
		}
		if full {
			return page, pos, nil
		}
		if !more {
			return page, nil, nil
		}
	}
	return page, pos, nil
}

// loadChunks loads the records of ids, each chunk of at most loadChunkBytes
// (by sizes, 0 where unknown) in a round trip of its own.
func loadChunks[T any](ctx context.Context, ids []string, sizes []int64,
	load func(ctx context.Context, ids []string) ([]T, []bool, error)) ([]T, []bool, error) {
	var records []T
	var found []bool
	for start := 0; start < len(ids); {
		end, bytes := start+1, sizes[start]
		for end < len(ids) && bytes+sizes[end] <= loadChunkBytes {
			bytes += sizes[end]
			end++
		}
		r, f, err := load(ctx, ids[start:end])
		if err != nil {
			return nil, nil, err
		}
		records, found = append(records, r...), append(found, f...)
		start = end
	}
	return records, found, nil
}

// GetOwned reads a record's json for a principal allowed to see it (its
// owner, an admin, or with partiesToo the task's requester and executor),
// or ErrNotFound, in one round trip that costs the same for somebody else's
// record as for a missing one.
func (s *Store) GetOwned(ctx context.Context, key, principal string, admin, partiesToo bool) ([]byte, error) {
	return s.scripts.readOwned.run(ctx, s, []string{key}, principal, flag(admin), flag(partiesToo), "0")
}

// OwnedRecord is a record's json and its notification endpoint list (nil
// when it has none).
type OwnedRecord struct {
	JSON      []byte
	Endpoints []byte
}

// GetOwnedWithEndpoints is GetOwned that also reads the record's notification
// endpoint list, in the same round trip.
func (s *Store) GetOwnedWithEndpoints(ctx context.Context, key, principal string, admin bool) (OwnedRecord, error) {
	return s.scripts.readOwnedEndpoints.run(ctx, s, []string{key}, principal, flag(admin), "0", "1")
}

// parseReadOwnedEndpoints reads read_owned's answer with the endpoint list:
// {json, list or nil}, or ErrNotFound.
func parseReadOwnedEndpoints(v any) (OwnedRecord, error) {
	if v == nil {
		return OwnedRecord{}, ErrNotFound
	}
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return OwnedRecord{}, fmt.Errorf("read_owned: unexpected reply %T", v)
	}
	rec, _ := pair[0].(string)
	if rec == "" {
		return OwnedRecord{}, ErrNotFound
	}
	out := OwnedRecord{JSON: []byte(rec)}
	if list, _ := pair[1].(string); list != "" {
		out.Endpoints = []byte(list)
	}
	return out, nil
}

// parseReadOwned reads read_owned's answer: the json, or ErrNotFound.
func parseReadOwned(v any) ([]byte, error) {
	switch b := v.(type) {
	case nil:
		return nil, ErrNotFound
	case string:
		return []byte(b), nil
	}
	return nil, fmt.Errorf("read_owned: unexpected reply %T", v)
}

// Owner is the owner field of a record's hash, "" when the record does not
// exist: for a list filtered by a parent, which must be the caller's.
func (s *Store) Owner(ctx context.Context, key string) (string, error) {
	return s.owner(ctx, key, "owner")
}

// Executor is a task record's executor field, its owner when it has none,
// or "" when there is no such record.
func (s *Store) Executor(ctx context.Context, key string) (string, error) {
	return s.owner(ctx, key, "executor", "owner")
}

// owner is the first of fields a record holds, or "" when it holds none.
func (s *Store) owner(ctx context.Context, key string, fields ...string) (string, error) {
	vs, err := s.readRecord(ctx, key, fields...)
	if err != nil {
		return "", err
	}
	for _, v := range vs {
		if o, ok := v.(string); ok {
			return o, nil
		}
	}
	return "", nil
}
