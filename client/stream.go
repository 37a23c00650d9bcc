package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"
)

// StreamTaskEvents follows a task's event log as server-sent events, from
// the event after `after` ("" for the beginning). When the connection drops
// it reconnects with Last-Event-ID, so the sequence has no gap and no
// duplicate. It ends when ctx ends, the loop breaks, or the server answers
// with an error (yielded once).
func (c *Client) StreamTaskEvents(ctx context.Context, id, after string) iter.Seq2[Event, error] {
	return c.stream(ctx, "/v1/tasks/"+segment(id)+"/events", after)
}

// StreamSessionEvents follows a session's event log; see StreamTaskEvents.
func (c *Client) StreamSessionEvents(ctx context.Context, id, after string) iter.Seq2[Event, error] {
	return c.stream(ctx, "/v1/sessions/"+segment(id)+"/events", after)
}

func (c *Client) stream(ctx context.Context, path, after string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		hc := *c.http
		hc.Timeout = 0 // a stream lasts as long as ctx
		last := after
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+path, nil)
			if err != nil {
				yield(Event{}, fmt.Errorf("taskhook: %w", err))
				return
			}
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("User-Agent", userAgent)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := hc.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = c.decodeError(resp)
				resp.Body.Close()
				yield(Event{}, err)
				return
			}
			if err == nil {
				backoff = 100 * time.Millisecond
				var more bool
				last, more = readStream(resp, last, yield)
				resp.Body.Close()
				if !more {
					return
				}
			}
			select { // the connection dropped: come back after a pause
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// readStream yields each event of one connection; it returns the last id
// seen and whether the caller still wants more.
func readStream(resp *http.Response, last string, yield func(Event, error) bool) (string, bool) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var ev Event
			err := json.Unmarshal([]byte(data.String()), &ev)
			data.Reset()
			if err != nil {
				return last, yield(Event{}, fmt.Errorf("taskhook: decode a streamed event: %w", err))
			}
			last = ev.ID
			if !yield(ev, nil) {
				return last, false
			}
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: "))
		}
	}
	return last, true
}
