package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A task's record is one Redis string, as the scripts write it (the
// prelude's rec_ helpers say why): each ended by a newline, a JSON object
// of its head fields (recordHead), a JSON object of the rest of its fields
// but three, its snapshot ("json") as it is, and the lengths of the first
// two of those three; then its log ids, command records and undo list
// (taskFieldLog, taskFieldCommands, taskFieldUndos) as they are. Every
// other record, and a task's written by an earlier version, is a hash; the
// readers here take either.

// recordHead is the fields a task record keeps in its head (the prelude's
// RECORD_HEAD).
var recordHead = map[string]bool{"rev": true, "status": true, "owner": true, "requester": true, "executor": true, "kind": true}

// recordHeadBytes is how much of a task's record a list reads to find its
// head (a script reads more, for the rest object too: the prelude's
// rec_front).
const recordHeadBytes = 512

// isTaskRecord tells whether key is a task's record (store.Keys.Task: the
// id follows "task:" and ends the key), which may be a string.
func isTaskRecord(key string) bool {
	i := strings.LastIndex(key, "}:task:")
	return i >= 0 && !strings.Contains(key[i+len("}:task:"):], ":")
}

// recordParts is a string record taken apart.
type recordParts struct {
	head, rest, snapshot string
	log, commands, undos string // the fields kept as they are ("" for none)
}

// recordRaw is the fields a task record keeps as they are, after its
// snapshot, in that order.
var recordRaw = []string{taskFieldLog, taskFieldCommands, taskFieldUndos}

// raw is the field name of those kept as they are, and whether it is one.
func (p recordParts) raw(name string) (string, bool) {
	switch name {
	case taskFieldLog:
		return p.log, true
	case taskFieldCommands:
		return p.commands, true
	case taskFieldUndos:
		return p.undos, true
	}
	return "", false
}

var errMalformedRecord = errors.New("malformed record")

// splitRecord takes a string record apart.
func splitRecord(rec string) (recordParts, error) {
	var p recordParts
	var ok [4]bool
	var lens string
	p.head, rec, ok[0] = strings.Cut(rec, "\n")
	p.rest, rec, ok[1] = strings.Cut(rec, "\n")
	p.snapshot, rec, ok[2] = strings.Cut(rec, "\n")
	lens, rec, ok[3] = strings.Cut(rec, "\n")
	if ok != [4]bool{true, true, true, true} {
		return recordParts{}, errMalformedRecord
	}
	logLen, commandsLen, _ := strings.Cut(lens, " ")
	l, err1 := strconv.Atoi(logLen)
	c, err2 := strconv.Atoi(commandsLen)
	if err1 != nil || err2 != nil || l < 0 || c < 0 || l+c > len(rec) {
		return recordParts{}, errMalformedRecord
	}
	p.log, p.commands, p.undos = rec[:l], rec[l:l+c], rec[l+c:]
	return p, nil
}

// errSnapshotNewline is a task snapshot that holds a raw newline, which a
// task record cannot keep (its snapshot ends at the first): compact JSON,
// as the services encode it, holds none.
var errSnapshotNewline = errors.New("store: a task snapshot holds a newline: it must be compact JSON")

// compactSnapshot refuses a snapshot a task record cannot keep.
func compactSnapshot(snapshot []byte) error {
	if bytes.IndexByte(snapshot, '\n') >= 0 {
		return errSnapshotNewline
	}
	return nil
}

// recordObject decodes a head or rest object. An empty one may be written
// as an array by the embedded store's cjson.
func recordObject(raw string) (map[string]string, error) {
	m := map[string]string{}
	if raw == "[]" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("malformed record: %w", err)
	}
	return m, nil
}

// recordValues are the fields named of a string record, as HMGET answers
// them (nil for a field it does not have). The rest is decoded only when a
// field of it is asked for.
func recordValues(rec string, names []string) ([]any, error) {
	p, err := splitRecord(rec)
	if err != nil {
		return nil, err
	}
	var head, rest map[string]string
	object := func(m *map[string]string, raw string) (map[string]string, error) {
		if *m == nil {
			*m, err = recordObject(raw)
		}
		return *m, err
	}
	vals := make([]any, len(names))
	for i, n := range names {
		if n == "json" {
			vals[i] = p.snapshot
			continue
		}
		if v, ok := p.raw(n); ok {
			if v != "" {
				vals[i] = v
			}
			continue
		}
		var m map[string]string
		if recordHead[n] {
			m, err = object(&head, p.head)
		} else {
			m, err = object(&rest, p.rest)
		}
		if err != nil {
			return nil, err
		}
		if v, ok := m[n]; ok {
			vals[i] = v
		}
	}
	return vals, nil
}

// headValues are the fields named (each of recordHead) of the first bytes
// of a string record: ok is false when its head runs past them.
func headValues(first string, names []string) (vals []any, ok bool) {
	head, _, found := strings.Cut(first, "\n")
	if !found {
		return nil, false
	}
	h, err := recordObject(head)
	if err != nil {
		return nil, false
	}
	vals = make([]any, len(names))
	for i, n := range names {
		if v, ok := h[n]; ok {
			vals[i] = v
		}
	}
	return vals, true
}

// DecodeRecord is the fields of a task's record as stored (a string), by
// name.
func DecodeRecord(raw string) (map[string]string, error) {
	p, err := splitRecord(raw)
	if err != nil {
		return nil, err
	}
	fields, err := recordObject(p.head)
	if err != nil {
		return nil, err
	}
	r, err := recordObject(p.rest)
	if err != nil {
		return nil, err
	}
	maps.Copy(fields, r)
	fields["json"] = p.snapshot
	for _, n := range recordRaw {
		if v, _ := p.raw(n); v != "" {
			fields[n] = v
		}
	}
	return fields, nil
}

// EncodeRecord is a task's record with fields, as the scripts write it.
func EncodeRecord(fields map[string]string) string {
	head, rest := map[string]string{}, map[string]string{}
	for n, v := range fields {
		switch {
		case n == "json" || slices.Contains(recordRaw, n):
		case recordHead[n]:
			head[n] = v
		default:
			rest[n] = v
		}
	}
	h, _ := json.Marshal(head) // a map of strings always encodes
	r, _ := json.Marshal(rest)
	log, commands := fields[taskFieldLog], fields[taskFieldCommands]
	return string(h) + "\n" + string(r) + "\n" + fields["json"] + "\n" +
		strconv.Itoa(len(log)) + " " + strconv.Itoa(len(commands)) + "\n" + log + commands + fields[taskFieldUndos]
}

// wrongType tells whether err is Redis refusing a command for the type of
// the key: a task record kept as a hash by an earlier version.
func wrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// recordFetch is one read of fields of one record, in a pipeline.
type recordFetch struct {
	key   string
	names []string
	str   *redis.StringCmd
	hash  *redis.SliceCmd
}

// readRecords reads the fields named of each record (names[i] of keys[i])
// as HMGET answers them: nil for a field, or a record, that is not there.
// One round trip, and a second for task records kept as hashes.
func (s *Store) readRecords(ctx context.Context, keys []string, names [][]string) ([][]any, error) {
	reads := make([]recordFetch, len(keys))
	pipe := s.RDB.Pipeline()
	for i, key := range keys {
		reads[i] = recordFetch{key: key, names: names[i]}
		if isTaskRecord(key) {
			reads[i].str = pipe.Get(ctx, key)
		} else {
			reads[i].hash = pipe.HMGet(ctx, key, names[i]...)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !wrongType(err) {
		return nil, unavailable(err)
	}
	var hashes []int
	out := make([][]any, len(keys))
	for i, r := range reads {
		switch {
		case r.hash != nil:
			out[i] = r.hash.Val()
		case wrongType(r.str.Err()):
			hashes = append(hashes, i)
		case errors.Is(r.str.Err(), redis.Nil):
			out[i] = make([]any, len(r.names))
		default:
			vals, err := recordValues(r.str.Val(), r.names)
			if err != nil {
				return nil, fmt.Errorf("record %s: %w", r.key, err)
			}
			out[i] = vals
		}
	}
	if len(hashes) == 0 {
		return out, nil
	}
	pipe = s.RDB.Pipeline()
	for _, i := range hashes {
		reads[i].hash = pipe.HMGet(ctx, keys[i], names[i]...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(err)
	}
	for _, i := range hashes {
		out[i] = reads[i].hash.Val()
	}
	return out, nil
}

// readRecord reads the fields named of one record, as readRecords does.
func (s *Store) readRecord(ctx context.Context, key string, names ...string) ([]any, error) {
	vals, err := s.readRecords(ctx, []string{key}, [][]string{names})
	if err != nil {
		return nil, err
	}
	return vals[0], nil
}

// readJSONs reads the json field of each record at keys, in one round trip
// (readRecords): found is false for a record that is not there.
func (s *Store) readJSONs(ctx context.Context, keys []string) (items [][]byte, found []bool, err error) {
	names := make([][]string, len(keys))
	for i := range names {
		names[i] = []string{"json"}
	}
	vals, err := s.readRecords(ctx, keys, names)
	if err != nil {
		return nil, nil, err
	}
	items, found = make([][]byte, len(keys)), make([]bool, len(keys))
	for i, v := range vals {
		if j, ok := v[0].(string); ok {
			items[i], found[i] = []byte(j), true
		}
	}
	return items, found, nil
}

// readHeads reads, for a list to filter and size its records before it
// loads them, the fields named (head fields, for a task record) of each
// record and, with sizeField, its size: that field's length for a hash,
// the whole string's for a task's. A task's head is read from its first
// recordHeadBytes, not its snapshot; one whose head runs past them is read
// whole. One round trip, and one more for what the first could not answer.
func (s *Store) readHeads(ctx context.Context, keys []string, names []string, sizeField string) ([][]any, []int64, error) {
	vals, sizes := make([][]any, len(keys)), make([]int64, len(keys))
	type read struct {
		fields *redis.SliceCmd
		head   *redis.StringCmd
		size   *redis.IntCmd
	}
	reads := make([]read, len(keys))
	// hashRead reads keys[i] as a hash: its fields, and its size field's
	// length.
	hashRead := func(pipe redis.Pipeliner, i int) {
		reads[i] = read{}
		if len(names) > 0 {
			reads[i].fields = pipe.HMGet(ctx, keys[i], names...)
		}
		if sizeField != "" {
			reads[i].size = pipe.HStrLen(ctx, keys[i], sizeField)
		}
	}
	pipe := s.RDB.Pipeline()
	for i, key := range keys {
		if !isTaskRecord(key) {
			hashRead(pipe, i)
			continue
		}
		if len(names) > 0 {
			reads[i].head = pipe.GetRange(ctx, key, 0, recordHeadBytes-1)
		}
		if sizeField != "" {
			reads[i].size = pipe.StrLen(ctx, key)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !wrongType(err) {
		return nil, nil, unavailable(err)
	}
	var hashes, long []int
	for i, r := range reads {
		if (r.head != nil && wrongType(r.head.Err())) || (r.size != nil && wrongType(r.size.Err())) {
			hashes = append(hashes, i) // a task's hash, of an earlier version
			continue
		}
		if r.size != nil {
			sizes[i] = r.size.Val()
		}
		switch {
		case r.fields != nil:
			vals[i] = r.fields.Val()
		case r.head != nil:
			v, ok := headValues(r.head.Val(), names)
			if !ok {
				long = append(long, i)
				continue
			}
			vals[i] = v
		}
	}
	if len(hashes) > 0 {
		pipe = s.RDB.Pipeline()
		for _, i := range hashes {
			hashRead(pipe, i)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, unavailable(err)
		}
		for _, i := range hashes {
			if reads[i].fields != nil {
				vals[i] = reads[i].fields.Val()
			}
			if reads[i].size != nil {
				sizes[i] = reads[i].size.Val()
			}
		}
	}
	if len(long) > 0 {
		longKeys, longNames := make([]string, len(long)), make([][]string, len(long))
		for j, i := range long {
			longKeys[j], longNames[j] = keys[i], names
		}
		got, err := s.readRecords(ctx, longKeys, longNames)
		if err != nil {
			return nil, nil, err
		}
		for j, i := range long {
			vals[i] = got[j]
		}
	}
	return vals, sizes, nil
}
