package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/jsonhtml"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/waits"
)

// readLog reads one page of a log for a route (a task's or a session's).
type readLog func(q waits.LogQuery) (waits.LogPage, error)

// pollLog begins a read of a route's log (a task's or a session's): ctx is
// the context of its reads.
type pollLog func(ctx context.Context, q waits.LogQuery) *waits.LogPoll

// serveEvents answers GET .../events in its JSON form, {events, cursor}, or
// as server-sent events. With ?kinds= only the events of those types are
// answered; the cursor still moves past the others. A JSON read that waits
// is parked where it can be, as a task long-poll is.
func (a *api) serveEvents(w http.ResponseWriter, r *http.Request, poll pollLog) {
	q := r.URL.Query()
	after := q.Get("after")
	kinds, err := parseKinds(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if wantsStream(r) {
		field := "after"
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			after, field = id, "Last-Event-ID"
		}
		if after != "" && !ids.ValidEventID(after) {
			a.writeError(w, r, invalidRequest(field, "is not an event id"))
			return
		}
		a.streamEvents(w, r, after, kinds, func(q waits.LogQuery) (waits.LogPage, error) {
			return poll(r.Context(), q).Wait(r.Context())
		})
		return
	}
	if after != "" && !ids.ValidEventID(after) {
		a.writeError(w, r, invalidRequest("after", "is not an event id"))
		return
	}
	limit, err := parseLimit(r, 100, 1000)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	wait, err := parseWait(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	query := waits.LogQuery{After: after, Limit: limit, Wait: wait, Kinds: kinds}
	a.serveLongPoll(w, r, wait, func(ctx context.Context) longPoll {
		return logPoll{poll(ctx, query), a.writeEventsPage}
	})
}

// writeEventsPage writes a page of a log in the JSON form of GET .../events.
func (a *api) writeEventsPage(w http.ResponseWriter, r *http.Request, page waits.LogPage, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	cursor := page.Cursor
	if cursor == "" {
		cursor = "0-0"
	}
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	for i, e := range page.Entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.JSON)
	}
	b.WriteString(`],"cursor":`)
	c, _ := json.Marshal(cursor)
	b.Write(c)
	b.WriteByte('}')
	writeRaw(w, http.StatusOK, b.Bytes())
}

// heartbeat is how often an idle stream sends a comment line.
const heartbeat = 15 * time.Second

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// streamEvents serves a log as server-sent events: every event (of kinds,
// when given) after the cursor, in log order, then each new one as it is
// appended, with a comment every 15 s while idle. It ends when the client
// leaves or the server drains. The first read checks access, so a missing or
// foreign log is a plain 404.
func (a *api) streamEvents(w http.ResponseWriter, r *http.Request, after string, kinds waits.Kinds, read readLog) {
	page, err := read(waits.LogQuery{After: after, Limit: 100, Kinds: kinds})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		a.writeError(w, r, errors.New("response writer cannot flush"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	draining := a.tasks.Draining()
	for {
		var b bytes.Buffer
		for _, e := range page.Entries {
			typ, ok := events.HeadType(e.JSON)
			if !ok {
				var head struct{ Type string }
				_ = json.Unmarshal(e.JSON, &head)
				typ = head.Type
			}
			fmt.Fprintf(&b, "id: %s\nevent: %s\ndata: %s\n\n", e.ID, typ, jsonhtml.Unescape(e.JSON))
		}
		after = page.Cursor
		if len(page.Entries) == 0 {
			b.WriteString(": heartbeat\n\n")
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-draining:
			return
		default:
		}
		if page, err = read(waits.LogQuery{After: after, Limit: 100, Wait: heartbeat, Kinds: kinds}); err != nil {
			return // the client sees the stream end and resumes with Last-Event-ID
		}
	}
}

// writeList writes {"items": [...], "nextCursor": ...} from stored JSON;
// nextCursor is null on the last page.
func writeList(w http.ResponseWriter, page paging.Page) {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i, it := range page.Items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(`],"nextCursor":`)
	var next any
	if page.Next != "" {
		next = page.Next
	}
	c, _ := json.Marshal(next)
	b.Write(c)
	b.WriteByte('}')
	writeRaw(w, http.StatusOK, b.Bytes())
}
