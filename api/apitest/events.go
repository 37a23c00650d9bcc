package apitest

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// Event is one block of a server-sent event stream, up to its blank line:
// an event, or a comment (a heartbeat).
type Event struct {
	ID, Event, Data, Comment string
}

// EventReader reads a text/event-stream body block by block, as a client of
// the stream would. A line that is none of the fields the servers send (id,
// event, data, a comment) is reported with t.Errorf.
type EventReader struct {
	t testing.TB
	r *bufio.Reader
}

// NewEventReader reads the events of body.
func NewEventReader(t testing.TB, body io.Reader) *EventReader {
	return &EventReader{t: t, r: bufio.NewReader(body)}
}

// Next reads the next block that holds anything. Its error is the body's:
// io.EOF where the stream ended.
func (e *EventReader) Next() (Event, error) {
	var ev Event
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if ev != (Event{}) {
				return ev, nil
			}
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "":
			ev.Comment = value
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			ev.Data += value
		default:
			e.t.Errorf("unexpected stream line %q", line)
		}
	}
}

// NextData reads up to the next block with data, passing over comments, and
// returns its data.
func (e *EventReader) NextData() (string, error) {
	for {
		ev, err := e.Next()
		if err != nil || ev.Data != "" {
			return ev.Data, err
		}
	}
}
