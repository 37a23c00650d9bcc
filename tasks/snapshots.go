package tasks

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/taskhook/taskhook/cache"
)

// snapshots holds recent task snapshots on this replica, so a command can be
// decided and written in one round trip: the write script compares revisions,
// so a stale entry costs a retry, never a wrong answer. It is fed by this
// replica's reads and writes and by the wake-ups of every replica.
//
// An entry keeps the snapshot decoded as well, made once: from the snapshot
// the first time it is asked for, or given by the write that stored it (the
// task the state machine made, which decodes from its snapshot to itself).
// Decoding it on every command was the largest part of a command's CPU that
// the store did not spend. get hands out a clone of it, which the caller may
// change.
type snapshots struct{ c *cache.LRU[cached] }

type cached struct {
	rev  int64
	json []byte
	task *decoded
}

// decoded is a snapshot's Task, made once.
type decoded struct {
	once sync.Once
	t    Task
	err  error
}

func newSnapshots(capacity int) snapshots { return snapshots{cache.New[cached](capacity)} }

// get returns the cached task, decoded, or false.
func (c snapshots) get(id string) (Task, []byte, bool) {
	e, ok := c.c.Get(id)
	if !ok {
		return Task{}, nil, false
	}
	e.task.once.Do(func() { e.task.err = json.Unmarshal(e.json, &e.task.t) })
	if e.task.err != nil {
		c.drop(id)
		return Task{}, nil, false
	}
	return e.task.t.clone(), e.json, true
}

// put stores a snapshot unless a newer one is cached, or the same one (the
// same revision and bytes), which keeps what was decoded of it.
func (c snapshots) put(id string, rev int64, raw []byte) {
	c.c.Put(id, cached{rev: rev, json: raw, task: &decoded{}}, func(old cached) bool {
		return old.rev < rev || (old.rev == rev && !bytes.Equal(old.json, raw))
	})
}

// putTask stores a snapshot and the task it decodes to, as put does: t is
// the task raw was encoded from. What is kept is t as raw decodes to it:
// its raw JSON as the encoding wrote it (compact, with <, > and & escaped).
func (c snapshots) putTask(id string, raw []byte, t Task) {
	kept := t.clone()
	for _, m := range []*json.RawMessage{&kept.Input, &kept.Metadata, &kept.Progress, &kept.Result} {
		*m = encodedRaw(*m)
	}
	if kept.Error != nil {
		kept.Error.Data = encodedRaw(kept.Error.Data)
	}
	d := &decoded{t: kept}
	d.once.Do(func() {})
	c.c.Put(id, cached{rev: t.Revision, json: raw, task: d}, func(old cached) bool { return old.rev <= t.Revision })
}

// stale drops the entry if it is older than rev.
func (c snapshots) stale(id string, rev int64) {
	c.c.Drop(id, func(old cached) bool { return old.rev < rev })
}

func (c snapshots) drop(id string) { c.c.Drop(id, nil) }

// encodedRaw is raw JSON as json.Marshal writes it inside a value: compact,
// with <, > and & escaped. Nil and invalid JSON are left as they are.
func encodedRaw(raw json.RawMessage) json.RawMessage {
	if raw == nil || !mayChangeEncoded(raw) {
		return raw
	}
	var compact, escaped bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return raw
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes()
}

// mayChangeEncoded reports whether raw holds a byte the encoding could
// write otherwise: white space, <, > or &, or the start of U+2028 or
// U+2029. Raw JSON that holds none (as every value a task decoded from
// its snapshot holds) is written as it is.
func mayChangeEncoded(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}
