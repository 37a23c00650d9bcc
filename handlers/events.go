package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/taskhook/taskhook/store"
)

type logEntry = store.LogEntry

// serveEvents answers GET .../events in its JSON form: {events, cursor}.
func (a *api) serveEvents(w http.ResponseWriter, r *http.Request, read func(after string, limit int, wait time.Duration) ([]logEntry, error)) {
	q := r.URL.Query()
	after := q.Get("after")
	if after != "" && !store.ValidStreamID(after) {
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
	entries, err := read(after, limit, wait)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	cursor := after
	if cursor == "" {
		cursor = "0-0"
	}
	if n := len(entries); n > 0 {
		cursor = entries[n-1].ID
	}
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	for i, e := range entries {
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

// writeList writes {"items": [...], "nextCursor": ...} from stored JSON.
func writeList(w http.ResponseWriter, items [][]byte, next *store.Position) {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(`],"nextCursor":`)
	c, _ := json.Marshal(encodeCursor(next))
	b.Write(c)
	b.WriteByte('}')
	writeRaw(w, http.StatusOK, b.Bytes())
}
