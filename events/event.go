// Package events holds the entries of every event log, a task's and a
// session's (their shape is api/wire's Event), and the timestamp every
// record shows. The logs themselves live in Redis streams.
//
// It imports api/wire only.
package events

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Known reports whether t is one of the contract's event types.
func Known(t string) bool { return slices.Contains(wire.EventTypes, t) }

// Event is one entry of a log. ID is the stream id of the entry: a cursor that
// increases strictly within a log. An event appended to a task log and to its
// session log gets the same id in both.
type Event = wire.Event[Time]

// Time is a timestamp that reads and writes as RFC 3339 UTC with milliseconds.
type Time struct{ time.Time }

// TimeFormat is the wire format of every timestamp.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// At returns t truncated to milliseconds, in UTC.
func At(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = parsed.UTC()
	return nil
}

// String is the wire form.
func (t Time) String() string { return t.UTC().Format(TimeFormat) }

// AppendHead appends a stored event's JSON as json.Marshal writes an Event
// with no id, up to and including `"data":`: the caller appends the data
// and the closing brace. The hot paths (every task command, every hook
// post) write their events with it instead of through reflection. An empty
// sessionID leaves "sessionId" out: a task event kept without its snapshot
// gets it back from the snapshot when it is read (SpliceSession).
func AppendHead(b []byte, typ string, at time.Time, sessionID, taskID string, revision int64) []byte {
	b = append(b, `{"type":`...)
	b = AppendString(b, typ)
	b = append(b, `,"at":"`...)
	b = At(at).AppendFormat(b, TimeFormat)
	b = append(b, '"')
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = AppendString(b, sessionID)
	}
	if taskID != "" {
		b = append(b, `,"taskId":`...)
		b = AppendString(b, taskID)
	}
	if revision != 0 {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, revision, 10)
	}
	return append(b, `,"data":`...)
}

// AppendJoined appends the members of the stored event ev (its JSON
// after the opening brace) with the snapshot snap put back at cut, the
// offset it was cut at. A head that left out the session (AppendHead with
// no session id) gets the snapshot's sessionId back, where AppendHead
// would have written it: the bytes are those of the event as it was before
// anything was cut. stamp says snap was worked back from a later snapshot
// (snapdelta.Back), whose lastUpdatedAt it may still hold: it is written as
// the event's "at", the time of the command that made the revision.
func AppendJoined(b []byte, ev string, cut int, snap []byte, stamp bool) []byte {
	head := ev[1:cut]
	members, _, _ := strings.Cut(head, `,"data":`)
	atFrom, atTo := stringValue(members, `,"at":"`)
	var session []byte
	if atTo > 0 && !strings.Contains(members, `,"sessionId":`) {
		session = snapshotSession(snap)
	}
	if session != nil {
		b = append(b, head[:atTo+1]...)
		b = append(b, `,"sessionId":`...)
		b = append(b, session...)
		b = append(b, head[atTo+1:]...)
	} else {
		b = append(b, head...)
	}
	from, to := 0, -1
	if stamp && atTo > 0 {
		from, to = updatedAt(snap)
	}
	if to > 0 {
		b = append(b, snap[:from]...)
		b = append(b, members[atFrom:atTo]...)
		b = append(b, snap[to:]...)
	} else {
		b = append(b, snap...)
	}
	return append(b, ev[cut:]...)
}

// stringValue is where the plain string value of the member that opens
// with name (its quote included) begins and ends, the closing quote at
// to; to is -1 when there is none.
func stringValue(s, name string) (from, to int) {
	_, rest, found := strings.Cut(s, name)
	end := strings.IndexByte(rest, '"')
	if !found || end < 0 {
		return 0, -1
	}
	from = len(s) - len(rest)
	return from, from + end
}

// updatedAt is where a task snapshot's lastUpdatedAt value begins and ends
// (to at its closing quote, -1 when there is none). It is the last member
// of that name: the snapshot's own comes after every member that holds a
// caller's JSON (input, metadata, progress, result, error), which may use
// the name too.
func updatedAt(snap []byte) (from, to int) {
	const name = `,"lastUpdatedAt":"`
	i := bytes.LastIndex(snap, []byte(name))
	if i < 0 {
		return 0, -1
	}
	from = i + len(name)
	end := bytes.IndexByte(snap[from:], '"')
	if end < 0 {
		return 0, -1
	}
	return from, from + end
}

// snapshotSession is the sessionId of a task snapshot as it stands there,
// a JSON string with its quotes, or nil when it has none.
func snapshotSession(snap []byte) []byte {
	const name = `"sessionId":"`
	i := bytes.Index(snap, []byte(name))
	if i < 0 {
		return nil
	}
	for k := i + len(name); k < len(snap); k++ {
		switch snap[k] {
		case '\\':
			k++
		case '"':
			return snap[i+len(name)-1 : k+1]
		}
	}
	return nil
}

// HeadType reads an event's type from its head as AppendHead writes it,
// behind the "id" a read puts first (withID); ok is false for JSON written
// otherwise, which the caller decodes instead.
func HeadType(event []byte) (typ string, ok bool) {
	rest, found := bytes.CutPrefix(event, []byte(`{"id":"`))
	if found {
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return "", false
		}
		rest = rest[end+1:]
		if rest, found = bytes.CutPrefix(rest, []byte(`,"type":"`)); !found {
			return "", false
		}
	} else if rest, found = bytes.CutPrefix(event, []byte(`{"type":"`)); !found {
		return "", false
	}
	end := bytes.IndexAny(rest, `"\`)
	if end < 0 || rest[end] != '"' {
		return "", false
	}
	return string(rest[:end]), true
}

// HeadTask reads the task id and revision from an event's head as
// AppendHead wrote it; ok is false for an event of no task (a session's,
// a hook's) or one written otherwise.
func HeadTask(event string) (taskID string, revision int64, ok bool) {
	data := strings.Index(event, `,"data":`)
	if data < 0 {
		return "", 0, false
	}
	head := event[:data]
	i := strings.Index(head, `,"taskId":"`)
	if i < 0 {
		return "", 0, false
	}
	rest := head[i+len(`,"taskId":"`):]
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return "", 0, false
	}
	after, found := strings.CutPrefix(rest[end+1:], `,"revision":`)
	if !found {
		return "", 0, false
	}
	revision, err := strconv.ParseInt(after, 10, 64)
	return rest[:end], revision, err == nil
}

// AppendString appends s as json.Marshal writes it: printable ASCII other
// than the quote, the backslash and the characters it escapes for HTML goes
// as it is; anything else through json.Marshal.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
