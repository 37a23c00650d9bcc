package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// Event is one entry of a session's or a task's log. ID is a cursor that
// increases strictly within a log. Its fields:
//
//	ID                string
//	Type              string          // EventTaskCreated, EventInputResolved, ...
//	At                time.Time
//	SessionID, TaskID string
//	Revision          int64           // the task's revision after a task event
//	Data              json.RawMessage // task.* events carry the task in data.task (see Task)
type Event wire.Event[time.Time]

// Task decodes the task snapshot that task.* events carry in data.task.
func (e Event) Task() (*Task, error) {
	var d struct {
		Task *Task `json:"task"`
	}
	if len(e.Data) > 0 {
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return nil, fmt.Errorf("taskhook: decode the data of event %s (%s): %w", e.ID, e.Type, err)
		}
	}
	if d.Task == nil {
		if !strings.HasPrefix(e.Type, "task.") {
			return nil, fmt.Errorf("taskhook: event %s is %s, not a task.* event: it carries no task", e.ID, e.Type)
		}
		return nil, fmt.Errorf("taskhook: event %s (%s) carries no task", e.ID, e.Type)
	}
	return d.Task, nil
}

// EventPage is one read of a log. Cursor is the id of the last event read:
// the After of the next read. A read that found nothing gives back its own
// After ("0-0" for the start of the log). With WithKinds the cursor is past
// the events of other types the read left aside, so an empty page may still
// move the cursor on.
type EventPage struct {
	Events []Event `json:"events"`
	Cursor string  `json:"cursor"`
}

// EventsParams is a read of a log.
type EventsParams struct {
	After string        // read events after this id; empty: from the start
	Limit int           // 0: the server's default
	Wait  time.Duration // when > 0 and nothing is there yet, wait up to this long for an event
}

func (c *Client) events(ctx context.Context, path string, p EventsParams, opts []CallOption) (*EventPage, error) {
	q := url.Values{}
	setNonEmpty(q, "after", p.After)
	setPaging(q, p.Limit, "")
	setWait(q, p.Wait)
	setKinds(q, callOf(opts).kinds)
	return fetch[EventPage](ctx, c, http.MethodGet, path, q, nil, opts)
}
