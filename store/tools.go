package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/paging"
)

// The fields of a tool's hash besides its endpoint (recordFieldEndpoints
// and recordFieldSecret, as for a session's or a task's), chosen here once
// (luanames.go hands them to the scripts).
const (
	toolFieldJSON     = "json"     // the tool as its callers see it: no endpoint
	toolFieldExecutor = "executor" // the principal that published it
	toolFieldRevision = "rev"      // +1 on every put, from 1
	toolFieldCreated  = "created"  // creation time, ms: the score of its index entries
	toolFieldOpen     = "open"     // "1" when anyone may call it
	toolFieldIndexed  = "idx"      // JSON array: the principals whose Keys.ToolsOf holds it
)

// ToolRecord is a tool as a read finds it.
type ToolRecord struct {
	JSON      []byte // the tool as its callers see it
	Executor  string
	Revision  int64
	Created   int64    // ms
	Endpoints []byte   // its endpoint list (views); nil when none
	Secrets   []string // endpoint id, sealed secret, ...: only when the read asked for them
}

// ToolResult is the answer of a tool put or delete.
type ToolResult struct {
	Outcome  Outcome // OK, NameTaken, Conflict (the tool changed since ToolState), Missing
	Created  bool    // put: the name was free
	Revision int64   // put: the tool's revision now
	Deleted  ToolRecord
}

var (
	parseToolPut = replies[ToolResult]{
		"ok": func(r scriptReply) (ToolResult, error) {
			return ToolResult{Outcome: OK, Created: r.str(1) == "created", Revision: r.int(2)}, nil
		},
		"taken": toolIs(NameTaken), "moved": toolIs(Conflict),
	}.parser("tool_put")
	parseToolDelete = replies[ToolResult]{
		"ok": func(r scriptReply) (ToolResult, error) {
			return ToolResult{Outcome: OK, Deleted: ToolRecord{JSON: []byte(r.str(1)), Endpoints: nonEmpty(r.str(2))}}, nil
		},
		"not_found": toolIs(Missing), "moved": toolIs(Conflict),
	}.parser("tool_delete")
	parseToolRead = replies[ToolRecord]{
		"ok": func(r scriptReply) (ToolRecord, error) {
			return ToolRecord{
				JSON: []byte(r.str(1)), Executor: r.str(2), Revision: r.int(3), Created: r.int(4),
				Endpoints: nonEmpty(r.str(5)), Secrets: r.strs(6),
			}, nil
		},
		"not_found": func(scriptReply) (ToolRecord, error) { return ToolRecord{}, ErrNotFound },
	}.parser("tool_read")
)

func toolIs(o Outcome) func(scriptReply) (ToolResult, error) {
	return func(scriptReply) (ToolResult, error) { return ToolResult{Outcome: o}, nil }
}

func nonEmpty(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// toolKey is the tool's hash and the partition its name falls in.
func (s *Store) toolKey(name string) (int, string) {
	p := ids.PartitionFor(name, s.Partitions)
	return p, s.Keys.Tool(p, name)
}

// ToolFor reads a tool for a principal who may see it (its executor, or a
// caller it admits), with its endpoints' sealed secrets when secrets is
// set; ErrNotFound for anybody else, as for a missing tool.
func (s *Store) ToolFor(ctx context.Context, name, principal string, secrets bool) (ToolRecord, error) {
	_, key := s.toolKey(name)
	return s.scripts.toolRead.run(ctx, s, []string{key}, principal, flag(secrets))
}

// ToolState is what a put or a delete must know of a tool before it
// writes: who holds the name and which indexes hold the tool. The write
// goes ahead only while the tool is still as read.
type ToolState struct {
	Executor string // "" when there is no such tool
	Revision int64
	Created  int64    // ms
	Indexed  []string // the principals whose Keys.ToolsOf holds it (none when anyone may call it)
}

// ReadToolState reads a tool's state, in one round trip.
func (s *Store) ReadToolState(ctx context.Context, name string) (ToolState, error) {
	_, key := s.toolKey(name)
	v, err := s.RDB.HMGet(ctx, key, toolFieldExecutor, toolFieldRevision, toolFieldCreated, toolFieldIndexed).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return ToolState{}, unavailable(err)
	}
	str := func(i int) string {
		if i < len(v) {
			s, _ := v[i].(string)
			return s
		}
		return ""
	}
	st := ToolState{Executor: str(0)}
	if st.Executor == "" {
		return st, nil
	}
	st.Revision, _ = strconv.ParseInt(str(1), 10, 64)
	st.Created, _ = strconv.ParseInt(str(2), 10, 64)
	if raw := str(3); raw != "" {
		if err := json.Unmarshal([]byte(raw), &st.Indexed); err != nil {
			return ToolState{}, fmt.Errorf("decode the indexes of tool %s: %w", name, err)
		}
	}
	return st, nil
}

// ToolPut publishes or replaces a tool.
type ToolPut struct {
	Name     string
	Executor string
	Was      ToolState // as ReadToolState found it
	JSON     []byte    // the tool as its callers see it
	Open     bool      // anyone may call it
	Indexed  []string  // when not Open: the principals whose index is to hold it (its callers and executor)
	Created  int64     // ms: Was.Created on a replace
	// Endpoints are the tool's endpoint list and sealed secrets (Response
	// is not used: a put keeps no answer).
	Endpoints NewEndpoints
}

// PutTool writes a tool and its indexes in one script. Outcome OK
// (Created: the name was free), NameTaken, or Conflict: the tool changed
// since w.Was was read; read it again and retry.
func (s *Store) PutTool(ctx context.Context, w ToolPut) (ToolResult, error) {
	p, key := s.toolKey(w.Name)
	cmdKey, cmdHash, cmdTTL := s.idemKey(p, idem.Key{})
	keys := []string{key, s.Keys.ToolsOpen(p), cmdKey}
	for _, who := range w.Was.Indexed {
		keys = append(keys, s.Keys.ToolsOf(p, who))
	}
	indexed := []string{}
	if !w.Open {
		for _, who := range w.Indexed {
			if !slices.Contains(indexed, who) {
				indexed = append(indexed, who)
				keys = append(keys, s.Keys.ToolsOf(p, who))
			}
		}
	}
	idx, err := json.Marshal(indexed)
	if err != nil {
		return ToolResult{}, err
	}
	args := []any{cmdHash, cmdTTL, w.Name, w.Executor, w.Was.Revision, w.Was.Created, w.JSON, flag(w.Open),
		len(w.Was.Indexed), idx, w.Created, string(w.Endpoints.List)}
	for _, sec := range w.Endpoints.Secrets {
		args = append(args, sec)
	}
	return s.scripts.toolPut.run(ctx, s, keys, args...)
}

// DeleteTool removes a tool its executor published, as read in was.
// Outcome OK (Deleted: the tool as it was), Missing (no such tool, or
// another principal's) or Conflict (it changed since was was read).
func (s *Store) DeleteTool(ctx context.Context, name, executor string, was ToolState) (ToolResult, error) {
	p, key := s.toolKey(name)
	cmdKey, cmdHash, cmdTTL := s.idemKey(p, idem.Key{})
	keys := []string{key, s.Keys.ToolsOpen(p), cmdKey}
	for _, who := range was.Indexed {
		keys = append(keys, s.Keys.ToolsOf(p, who))
	}
	return s.scripts.toolDelete.run(ctx, s, keys, cmdHash, cmdTTL, name, executor, was.Revision, was.Created)
}

// ListTools pages through the tools principal may see, newest first: those
// anyone may call and those open to it (its own among them), from the
// indexes of every partition. Each record's fields are checked again
// before it is loaded, so an index entry that no longer admits principal
// is passed over.
func (s *Store) ListTools(ctx context.Context, principal string, after *paging.Position, limit int) ([]ToolRecord, string, error) {
	indexes := make([]string, 0, 2*s.Partitions)
	for p := range s.Partitions {
		indexes = append(indexes, s.Keys.ToolsOpen(p), s.Keys.ToolsOf(p, principal))
	}
	record := func(name string) string {
		_, key := s.toolKey(name)
		return key
	}
	load := func(ctx context.Context, names []string) ([]ToolRecord, []bool, error) {
		pipe := s.RDB.Pipeline()
		cmds := make([]*redis.SliceCmd, len(names))
		for i, name := range names {
			cmds[i] = pipe.HMGet(ctx, record(name), toolFieldJSON, toolFieldExecutor, recordFieldEndpoints)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, unavailable(err)
		}
		out, found := make([]ToolRecord, len(names)), make([]bool, len(names))
		for i, c := range cmds {
			v := c.Val()
			raw, _ := v[0].(string)
			executor, _ := v[1].(string)
			list, _ := v[2].(string)
			out[i] = ToolRecord{JSON: []byte(raw), Executor: executor, Endpoints: nonEmpty(list)}
			found[i] = raw != ""
		}
		return out, found, nil
	}
	f := ListFilter{
		Fields:    []string{toolFieldExecutor, toolFieldOpen, toolFieldIndexed},
		Keep:      func(v []string) bool { return toolVisible(v[0], v[1], v[2], principal) },
		SizeField: toolFieldJSON,
	}
	items, next, err := listIndexed(ctx, s, indexes, record, after, limit, f, load)
	return items, next.Cursor(), err
}

// toolVisible is the prelude's tool_visible, for a list's filter: whether
// principal may see a tool with these fields.
func toolVisible(executor, open, indexed, principal string) bool {
	if principal == "" || executor == "" {
		return false
	}
	if executor == principal || open == "1" {
		return true
	}
	var who []string
	_ = json.Unmarshal([]byte(indexed), &who)
	return slices.Contains(who, principal)
}
