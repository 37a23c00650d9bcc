package tools

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
)

// HintTTL is how long a replica calls a tool from what it read of it last,
// without reading it again: a call is then the one round trip of its task's
// create. A tool replaced or deleted through another replica is called as
// it was for at most this long there; through this replica, at once as it
// is.
const HintTTL = time.Second

// hint is a tool as a replica read it for a call: the record, who may call
// it, and when it was read.
type hint struct {
	rec     store.ToolRecord
	callers []string
	read    time.Time
}

// mayCall is the store's tool_visible rule on a hint: the publisher, or a
// caller the tool names, or anybody when it names "*".
func (h hint) mayCall(p authz.Principal) bool {
	if p.ID == "" {
		return false
	}
	return h.rec.Executor == p.ID || slices.Contains(h.callers, wire.ToolCallersAll) || slices.Contains(h.callers, p.ID)
}

// toolToCall is the tool name as p may call it: from this replica's hint
// while it is fresh, else read (and the hint renewed). A tool p may not
// call is problem.ErrNotFound either way.
func (s *Service) toolToCall(ctx context.Context, p authz.Principal, name string) (store.ToolRecord, error) {
	if h, ok := s.hints.Get(name); ok && s.now().Sub(h.read) < HintTTL {
		if !h.mayCall(p) {
			return store.ToolRecord{}, problem.ErrNotFound
		}
		return h.rec, nil
	}
	rec, err := s.store.ToolFor(ctx, name, p.ID, true)
	if err != nil {
		return store.ToolRecord{}, err
	}
	var seen struct {
		Callers []string `json:"callers"`
	}
	if json.Unmarshal(rec.JSON, &seen) == nil {
		s.hints.Put(name, hint{rec: rec, callers: seen.Callers, read: s.now()}, nil)
	}
	return rec, nil
}

// forget drops this replica's hint of a tool it has just changed.
func (s *Service) forget(name string) { s.hints.Drop(name, nil) }
