// Package snapdelta keeps a task's past snapshots as what changed: Undo is
// what takes a snapshot back to the one before it, so a store that keeps
// the current snapshot and one undo per revision can give every revision's
// snapshot again, byte for byte, without keeping each whole.
//
// A snapshot is a JSON object as json.Marshal writes a wire.Task: compact,
// its members in the struct's order. An undo is a JSON object of the
// members whose value the older snapshot had and the newer one changed or
// lacks, with their older values, and, under "-", the names of the members
// the older snapshot lacked. Two members every revision changes are left
// out of it, since a read knows them without: "revision", one less than the
// newer snapshot's, which Back writes itself, and "lastUpdatedAt", the time
// of that revision's events, which Back leaves as the newer snapshot has
// it for the caller to write (an undo written before holds both, and Back
// applies them as any other).
package snapdelta

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
)

// removed is the undo's member that names the members to drop: no task
// member is called that.
const removed = "-"

// Members every revision stamps, which no undo keeps.
const (
	revision      = "revision"
	lastUpdatedAt = "lastUpdatedAt"
)

// member is one member of a JSON object: its name as written between the
// quotes (no task member's name needs an escape) and its value's text, both
// slices of the object's bytes.
type member struct {
	name  []byte
	value []byte
}

// Undo is the undo that takes newer back to older: Back(newer,
// {Undo(older, newer)})[0] is older.
func Undo(older, newer []byte) ([]byte, error) {
	var oldRoom, curRoom [24]member
	d, err := readDiff(older, newer, oldRoom[:0], curRoom[:0])
	if err != nil {
		return nil, err
	}
	return d.undo(), nil
}

// UndoAndEdits is Undo and Edits of the same two snapshots, each read once.
func UndoAndEdits(older, newer []byte) (undo, edits []byte, err error) {
	var oldRoom, curRoom [24]member
	d, err := readDiff(older, newer, oldRoom[:0], curRoom[:0])
	if err != nil {
		return nil, nil, err
	}
	return d.undo(), d.edits(), nil
}

// diff is two snapshots and their members, read once for what is made of
// the pair (an undo, edits).
type diff struct {
	older, newer []byte
	old, cur     []member
}

// readDiff reads the members of older and newer into the room given for
// each.
func readDiff(older, newer []byte, oldRoom, curRoom []member) (d diff, err error) {
	d.older, d.newer = older, newer
	if d.old, err = membersInto(oldRoom, older); err == nil {
		d.cur, err = membersInto(curRoom, newer)
	}
	return d, err
}

func (d diff) undo() []byte {
	old, cur := d.old, d.cur
	b := append(make([]byte, 0, 128), '{')
	// Both are in a wire.Task's order, so each search goes on from where
	// the last one found its member.
	j := 0
	for _, m := range old {
		if string(m.name) == revision || string(m.name) == lastUpdatedAt {
			continue
		}
		v, ok := find(cur, m.name, &j)
		if ok && bytes.Equal(v, m.value) {
			continue
		}
		b = appendMember(b, m)
	}
	var list []byte
	k := 0
	for _, m := range cur {
		if _, ok := find(old, m.name, &k); ok {
			continue
		}
		if list == nil {
			list = append(make([]byte, 0, 64), '[')
		} else {
			list = append(list, ',')
		}
		list = append(append(append(list, '"'), m.name...), '"')
	}
	if list != nil {
		b = appendMember(b, member{[]byte(removed), append(list, ']')})
	}
	return append(b, '}')
}

// find is the value of the member of ms called name, searched from *from
// on and then from the start; *from is left just past it.
func find(ms []member, name []byte, from *int) ([]byte, bool) {
	for n := range len(ms) {
		i := (*from + n) % len(ms)
		if bytes.Equal(ms[i].name, name) {
			*from = i + 1
			return ms[i].value, true
		}
	}
	return nil, false
}

// Back is the snapshots before snapshot, newest first: Back(s, u)[k] is s
// with u[0] to u[k] applied in turn, each the snapshot of the revision
// before the last, its "revision" one less; "lastUpdatedAt" stays as the
// undos leave it (see the package doc). A member an undo brings back goes
// where a wire.Task has it. The snapshot is read once, however many undos
// there are.
func Back(snapshot []byte, undos [][]byte) ([][]byte, error) {
	cur, err := membersInto(make([]member, 0, 24), snapshot)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(undos))
	size := len(snapshot)
	rev, hasRev := int64(0), false
	var k int
	if v, ok := find(cur, []byte(revision), &k); ok {
		rev, err = strconv.ParseInt(string(v), 10, 64)
		hasRev = err == nil
	}
	for _, undo := range undos {
		changes, err := membersInto(make([]member, 0, 6), undo)
		if err != nil {
			return nil, err
		}
		if rev--; hasRev {
			cur = set(cur, member{[]byte(revision), strconv.AppendInt(nil, rev, 10)})
		}
		// cur is changed in place: each revision is written out before the
		// next undo, and its members' bytes are the snapshot's and undos'.
		for _, c := range changes {
			if string(c.name) != removed {
				cur = set(cur, c)
				continue
			}
			names, err := nameList(c.value)
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				cur = drop(cur, n)
			}
		}
		b := append(make([]byte, 0, size+len(undo)), '{')
		for _, m := range cur {
			b = appendMember(b, m)
		}
		b = append(b, '}')
		size = len(b)
		out = append(out, b)
	}
	return out, nil
}

// nameList reads the list of member names an undo drops, each as written
// between its quotes (as member names are compared).
func nameList(b []byte) ([][]byte, error) {
	bad := errNotNames
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, bad
	}
	var names [][]byte
	for i := 1; i < len(b)-1; {
		if b[i] != '"' {
			return nil, bad
		}
		end, err := stringEnd(b, i)
		if err != nil || end > len(b)-1 {
			return nil, bad
		}
		names = append(names, b[i+1:end-1])
		switch {
		case end == len(b)-1:
			return names, nil
		case b[end] == ',':
			i = end + 1
		default:
			return nil, bad
		}
	}
	return names, nil
}

func drop(ms []member, name []byte) []member {
	for i, m := range ms {
		if bytes.Equal(m.name, name) {
			return append(ms[:i], ms[i+1:]...)
		}
	}
	return ms
}

// set gives the member its value, in its place when the snapshot has it,
// else before the first member a wire.Task writes after it.
func set(ms []member, c member) []member {
	for i := range ms {
		if bytes.Equal(ms[i].name, c.name) {
			ms[i].value = c.value
			return ms
		}
	}
	at, p := len(ms), place(c.name)
	for i := range ms {
		if place(ms[i].name) > p {
			at = i
			break
		}
	}
	return slices.Insert(ms, at, c)
}

// order is each member's place in a wire.Task's JSON.
var order = func() map[string]int {
	t := reflect.TypeFor[wire.Task[string, string]]()
	o := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			o[name] = i
		}
	}
	return o
}()

// place is where a member goes; one a wire.Task does not have goes last.
func place(name []byte) int {
	if i, ok := order[string(name)]; ok {
		return i
	}
	return len(order)
}

func appendMember(b []byte, m member) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, m.name...)
	b = append(b, '"', ':')
	return append(b, m.value...)
}

var (
	errNotObject = errors.New("snapdelta: not a JSON object")
	errNotNames  = errors.New("snapdelta: the names to drop are not a list of strings")
)

// membersInto appends a JSON object's members to ms, in order. It expects
// what json.Marshal writes and checks only what it must to find each
// member's end.
func membersInto(ms []member, b []byte) ([]member, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ms, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, errNotObject
		}
		end, err := stringEnd(b, i)
		if err != nil {
			return nil, err
		}
		name := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotObject
		}
		i = skipSpace(b, i+1)
		vend, err := valueEnd(b, i)
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{name, b[i:vend]})
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, errNotObject
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if skipSpace(b, i+1) != len(b) {
				return nil, errNotObject
			}
			return ms, nil
		default:
			return nil, errNotObject
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i] (a quote).
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("snapdelta: a string does not end")
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errNotObject
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := stringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("snapdelta: an object or array does not end")
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		if j == i {
			return 0, errNotObject
		}
		return j, nil
	}
}
