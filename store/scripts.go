package store

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Scripts are every Lua script the service runs, each with the shared prelude
// in front. All Lua lives in store/lua.
type Scripts struct {
	SessionCreate      *redis.Script
	TaskCreate         *redis.Script
	TaskApply          *redis.Script
	SessionCancel      *redis.Script
	SessionCancelTasks *redis.Script
	SessionCancelDone  *redis.Script
	HookCreate         *redis.Script
	HookIngest         *redis.Script
	HookRead           *redis.Script
	HookAck            *redis.Script
	HookClose          *redis.Script
	ReadOwned          *redis.Script
}

func loadScripts() (*Scripts, error) {
	prelude, err := luaFiles.ReadFile("lua/prelude.lua")
	if err != nil {
		return nil, err
	}
	load := func(name string) (*redis.Script, error) {
		body, err := luaFiles.ReadFile("lua/" + name + ".lua")
		if err != nil {
			return nil, err
		}
		return redis.NewScript(string(prelude) + "\n" + string(body)), nil
	}
	s := &Scripts{}
	for name, dst := range s.named() {
		if *dst, err = load(name); err != nil {
			return nil, fmt.Errorf("load script %s: %w", name, err)
		}
	}
	return s, nil
}

// named maps each script file's name to its field.
func (s *Scripts) named() map[string]**redis.Script {
	return map[string]**redis.Script{
		"session_create":       &s.SessionCreate,
		"task_create":          &s.TaskCreate,
		"task_apply":           &s.TaskApply,
		"session_cancel":       &s.SessionCancel,
		"session_cancel_tasks": &s.SessionCancelTasks,
		"session_cancel_done":  &s.SessionCancelDone,
		"hook_create":          &s.HookCreate,
		"hook_ingest":          &s.HookIngest,
		"hook_read":            &s.HookRead,
		"hook_ack":             &s.HookAck,
		"hook_close":           &s.HookClose,
		"read_owned":           &s.ReadOwned,
	}
}

func (s *Scripts) all() []*redis.Script {
	var out []*redis.Script
	for _, sc := range s.named() {
		out = append(out, *sc)
	}
	return out
}

// preload loads every script on every node, so the first EVALSHA of each does
// not pay for a NOSCRIPT fallback.
func (s *Scripts) preload(ctx context.Context, rdb redis.UniversalClient) error {
	loadOn := func(ctx context.Context, c *redis.Client) error {
		for _, sc := range s.all() {
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
