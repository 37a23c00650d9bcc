package snapdelta

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
)

// Edits is what takes older to newer as byte edits, for a writer that sends
// a store the change to a snapshot the store holds rather than the whole new
// one: most commands change a few bytes of it (the revision, a status, a
// message, the time). It reads
//
//	=<base>;<edit>...
//
// with each edit, in the order of the bytes it replaces,
//
//	<offset>,<replaced>,<inserted>:<the inserted bytes>
//
// that is, the bytes older has from offset (counted from 0) on for replaced
// bytes are replaced by the inserted bytes that follow. The base, first, is
// the first 16 hex digits of older's SHA-1, by which the store refuses
// edits made for other bytes than it holds (ApplyEdits): a snapshot a
// writer read before a failover lost its revision, say.
//
// The members both snapshots hold with the same value stay where they are;
// what lies between two of them is replaced, less the bytes it begins and
// ends with in both.
func Edits(older, newer []byte) ([]byte, error) {
	var oldRoom, curRoom [24]member
	d, err := readDiff(older, newer, oldRoom[:0], curRoom[:0])
	if err != nil {
		return nil, err
	}
	return d.edits(), nil
}

func (d diff) edits() []byte {
	older, newer, old, cur := d.older, d.newer, d.old, d.cur
	b := append(append(make([]byte, 0, 128), '='), base(older)...)
	b = append(b, ';')
	// from and to are where the bytes after the last member both keep
	// begin, in older and in newer.
	from, to := 0, 0
	gap := func(oldEnd, newEnd int) {
		o, n := older[from:oldEnd], newer[to:newEnd]
		p := commonPrefix(o, n)
		s := commonSuffix(o[p:], n[p:])
		if len(o) != p+s || len(n) != p+s {
			b = strconv.AppendInt(b, int64(from+p), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(len(o)-p-s), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(len(n)-p-s), 10)
			b = append(b, ':')
			b = append(b, n[p:len(n)-s]...)
		}
	}
	i, j := 0, 0
	for i < len(old) && j < len(cur) {
		switch {
		case bytes.Equal(old[i].name, cur[j].name):
			if bytes.Equal(old[i].value, cur[j].value) {
				gap(memberStart(older, old[i]), memberStart(newer, cur[j]))
				from, to = end(older, old[i]), end(newer, cur[j])
			}
			i, j = i+1, j+1
		case holds(cur[j+1:], old[i].name):
			j++ // newer added cur[j]
		default:
			i++ // newer dropped old[i]
		}
	}
	gap(len(older), len(newer))
	return b
}

// base is what names older in its edits.
func base(older []byte) []byte {
	sum := sha1.Sum(older)
	return hex.AppendEncode(nil, sum[:8])
}

// ApplyEdits is older with edits (Edits) applied, as the store applies
// them; it refuses edits made for other bytes than older.
func ApplyEdits(older, edits []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(edits, []byte{'='})
	k := bytes.IndexByte(rest, ';')
	if !ok || k < 0 {
		return nil, errEdits
	}
	if !bytes.Equal(rest[:k], base(older)) {
		return nil, errEditsBase
	}
	rest = rest[k+1:]
	var err error
	out := make([]byte, 0, len(older)+len(edits))
	from := 0
	for len(rest) > 0 {
		var at, replaced, inserted int
		if at, rest, err = number(rest, ','); err == nil {
			if replaced, rest, err = number(rest, ','); err == nil {
				inserted, rest, err = number(rest, ':')
			}
		}
		if err != nil || at < from || at+replaced > len(older) || inserted > len(rest) {
			return nil, errEdits
		}
		out = append(out, older[from:at]...)
		out = append(out, rest[:inserted]...)
		from, rest = at+replaced, rest[inserted:]
	}
	return append(out, older[from:]...), nil
}

var (
	errEdits     = errors.New("snapdelta: malformed edits")
	errEditsBase = errors.New("snapdelta: the edits are for other bytes")
)

// number reads the decimal number b opens with, up to sep, and what
// follows sep.
func number(b []byte, sep byte) (int, []byte, error) {
	k := bytes.IndexByte(b, sep)
	if k < 0 {
		return 0, nil, errEdits
	}
	n, err := strconv.Atoi(string(b[:k]))
	if err != nil || n < 0 {
		return 0, nil, errEdits
	}
	return n, b[k+1:], nil
}

// memberStart and end are where member m of b begins (its name's opening
// quote) and ends (just past its value): m's slices are slices of b, so
// their capacity tells where in b they begin.
func memberStart(b []byte, m member) int { return cap(b) - cap(m.name) - 1 }

func end(b []byte, m member) int { return cap(b) - cap(m.value) + len(m.value) }

func holds(ms []member, name []byte) bool {
	for _, m := range ms {
		if bytes.Equal(m.name, name) {
			return true
		}
	}
	return false
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}
