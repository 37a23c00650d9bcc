package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/waits"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua script (with the shared prelude in front) and the parser
// of its answer: each script's reply is read by its own parser, against the
// Returns line of its header. All Lua lives in store/lua.
type script[R any] struct {
	lua   *redis.Script
	parse func(reply any) (R, error)
	// rerun: the script's KEYS hold a command record, so it may be sent
	// again when the connection breaks under it (see exec).
	rerun bool
}

// run sends the script through exec and parses its answer.
func (sc script[R]) run(ctx context.Context, s *Store, keys []string, args ...any) (R, error) {
	reply, err := s.exec(ctx, sc.lua, sc.rerun, keys, args)
	if err != nil {
		var zero R
		return zero, err
	}
	return sc.parse(reply)
}

// runAll sends the script once per call, in one round trip, and parses each
// answer.
func (sc script[R]) runAll(ctx context.Context, s *Store, calls []scriptCall) ([]R, error) {
	replies, err := s.execAll(ctx, sc.lua, calls)
	if err != nil {
		return nil, err
	}
	out := make([]R, len(replies))
	for i, r := range replies {
		if out[i], err = sc.parse(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scriptCall is the KEYS and ARGV of one run of a script.
type scriptCall struct {
	keys []string
	args []any
}

// scripts are every script the service runs.
type scripts struct {
	sessionCreate      script[Result]
	taskCreate         script[Result]
	taskApply          script[Result]
	sessionCancel      script[Result]
	sessionCancelTasks script[Result]
	sessionCancelDone  script[Result]
	hookCreate         script[Result]
	hookIngest         script[IngestResult]
	hookRead           script[HookBatch]
	hookAck            script[AckResult]
	hookClose          script[CloseResult]
	hookStatus         script[HookStatus]
	readOwned          script[[]byte]
	readOwnedEndpoints script[OwnedRecord]
	notifyAdd          script[EndpointsResult]
	notifyRemove       script[EndpointsResult]
	outboxSettle       script[bool]
	outboxDue          script[int]
	slackMessage       script[bool]
	logReadKinds       script[waits.LogRead]
	taskKindsAfter     script[kindsAfter]
	fieldReseal        script[bool]
	toolPut            script[ToolResult]
	toolDelete         script[ToolResult]
	toolRead           script[ToolRecord]

	all []*redis.Script // for preload
}

// Whether a script may be sent again after a lost connection.
const (
	withCommandID = true  // it carries a command id: a second run answers what the first did
	readsOrOnce   = false // it carries none: sent once
)

// loadScripts is the scripts with the names Go hands them inlined, made
// once per process: the names are constants, so every store opened shares
// one set (the scripts are read-only once made).
var loadScripts = sync.OnceValues(buildScripts)

func buildScripts() (*scripts, error) {
	prelude, err := luaFiles.ReadFile("lua/prelude.lua")
	if err != nil {
		return nil, err
	}
	s := &scripts{}
	defs := preludeDefs(string(prelude))
	var errs []error
	lua := func(name string) *redis.Script {
		body, err := luaFiles.ReadFile("lua/" + name + ".lua")
		if err != nil {
			errs = append(errs, fmt.Errorf("load script %s: %w", name, err))
		}
		src, err := inlineNames(preludeFor(defs, string(body)) + "\n" + string(body))
		if err != nil {
			errs = append(errs, fmt.Errorf("load script %s: %w", name, err))
		}
		sc := redis.NewScript(src)
		s.all = append(s.all, sc)
		return sc
	}
	s.sessionCreate = script[Result]{lua("session_create"), parseSessionCreate, withCommandID}
	s.taskCreate = script[Result]{lua("task_create"), parseTaskCreate, withCommandID}
	s.taskApply = script[Result]{lua("task_apply"), parseTaskApply, withCommandID}
	s.sessionCancel = script[Result]{lua("session_cancel"), parseSessionCancel, withCommandID}
	s.sessionCancelTasks = script[Result]{lua("session_cancel_tasks"), parseSessionCancelTasks, withCommandID}
	s.sessionCancelDone = script[Result]{lua("session_cancel_done"), parseSessionCancelDone, withCommandID}
	s.hookCreate = script[Result]{lua("hook_create"), parseHookCreate, withCommandID}
	s.hookIngest = script[IngestResult]{lua("hook_ingest"), parseHookIngest, withCommandID}
	s.hookRead = script[HookBatch]{lua("hook_read"), parseHookRead, readsOrOnce}
	s.hookAck = script[AckResult]{lua("hook_ack"), parseHookAck, withCommandID}
	s.hookClose = script[CloseResult]{lua("hook_close"), parseHookClose, withCommandID}
	s.hookStatus = script[HookStatus]{lua("hook_status"), parseHookStatus, readsOrOnce}
	s.readOwned = script[[]byte]{lua("read_owned"), parseReadOwned, readsOrOnce}
	s.readOwnedEndpoints = script[OwnedRecord]{s.readOwned.lua, parseReadOwnedEndpoints, readsOrOnce}
	s.notifyAdd = script[EndpointsResult]{lua("notify_add"), parseNotifyAdd, withCommandID}
	s.notifyRemove = script[EndpointsResult]{lua("notify_remove"), parseNotifyRemove, withCommandID}
	s.outboxSettle = script[bool]{lua("outbox_settle"), parseOutboxSettle, withCommandID}
	s.outboxDue = script[int]{lua("outbox_due"), parseOutboxDue, readsOrOnce}
	s.slackMessage = script[bool]{lua("slack_message"), parseSlackMessage, withCommandID}
	s.logReadKinds = script[waits.LogRead]{lua("log_read_kinds"), parseLogReadKinds, readsOrOnce}
	s.taskKindsAfter = script[kindsAfter]{lua("task_kinds_after"), parseTaskKindsAfter, readsOrOnce}
	s.fieldReseal = script[bool]{lua("field_reseal"), parseFieldReseal, readsOrOnce}
	s.toolPut = script[ToolResult]{lua("tool_put"), parseToolPut, withCommandID}
	s.toolDelete = script[ToolResult]{lua("tool_delete"), parseToolDelete, withCommandID}
	s.toolRead = script[ToolRecord]{lua("tool_read"), parseToolRead, readsOrOnce}
	return s, errors.Join(errs...)
}

// preload loads every script on every node, so the first EVALSHA of each does
// not pay for a NOSCRIPT fallback.
func (s *scripts) preload(ctx context.Context, rdb redis.UniversalClient) error {
	loadOn := func(ctx context.Context, c *redis.Client) error {
		for _, sc := range s.all {
			if err := sc.Load(ctx, c).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, loadOn)
	case *redis.Client:
		return loadOn(ctx, c)
	}
	return nil
}

// exec sends a script. When the connection breaks under it (Redis restarted,
// a connection reset) the script may or may not have run; one that carries
// a command id (rerun) is sent once more: the command id among its keys
// makes a second run answer what the first one did. A timeout is not
// retried: the request's time is spent, and the caller answers 503 with the
// outcome unknown. The client library itself never re-sends (MaxRetries is
// off), so a stall costs one timeout, not two. Scripts of concurrent
// requests share round trips (groupCommit). A script that answers false (or
// nothing) replies nil.
func (s *Store) exec(ctx context.Context, sc *redis.Script, rerun bool, keys []string, args []any) (any, error) {
	reply, err := s.commit.run(ctx, sc, keys, args)
	if err != nil && rerun && connectionLost(err) && ctx.Err() == nil {
		reply, err = s.commit.run(ctx, sc, keys, args)
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return reply, nil
}

// execAll sends a read-only script once per call in one pipeline (each call
// may touch another slot; see evalPipeline). Nothing is sent twice after a
// lost connection.
func (s *Store) execAll(ctx context.Context, sc *redis.Script, calls []scriptCall) ([]any, error) {
	if len(calls) == 1 {
		reply, err := s.exec(ctx, sc, readsOrOnce, calls[0].keys, calls[0].args)
		return []any{reply}, err
	}
	cmds := evalPipeline(ctx, s.RDB, len(calls), func(i int) (*redis.Script, []string, []any) {
		return sc, calls[i].keys, calls[i].args
	})
	out := make([]any, len(cmds))
	for i, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, unavailable(err)
		}
		out[i] = v
	}
	return out, nil
}

// evalPipeline sends n script calls as EVALSHAs in one pipeline, then, in a
// second, as EVALs with their bodies the calls that a Redis which lost its
// scripts refused (NOSCRIPT). Each command carries its own answer or error.
func evalPipeline(ctx context.Context, rdb redis.UniversalClient, n int, call func(i int) (*redis.Script, []string, []any)) []*redis.Cmd {
	send := func(eval func(*redis.Script, context.Context, redis.Scripter, []string, ...any) *redis.Cmd, which []int) []*redis.Cmd {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(which))
		for i, c := range which {
			sc, keys, args := call(c)
			cmds[i] = eval(sc, ctx, pipe, keys, args...)
		}
		_, _ = pipe.Exec(ctx) // the error is each failed command's own
		return cmds
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	cmds := send((*redis.Script).EvalSha, all)
	var again []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		for i, c := range send((*redis.Script).Eval, again) {
			cmds[again[i]] = c
		}
	}
	return cmds
}
