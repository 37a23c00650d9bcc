package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
)

// StreamTaskEvents follows a task's event log as server-sent events, from
// the event after `after` ("" for the beginning).
//
// It reconnects by itself whenever a reconnect can mend things: the
// connection drops, the server ends the stream (a replica shutting down),
// or an answer is a 502, 503, 504 or a 429 with Retry-After. It comes back
// after a pause (exponential backoff with full jitter, at least the
// answer's Retry-After) and resumes after the last event it delivered
// (Last-Event-ID), so the sequence has no gap and no duplicate. It ends
// when ctx ends or the loop breaks, and with any other error (a 401 or a
// 404 answer, an event it cannot decode), yielded once. With WithKinds it
// yields only the events of those types (the only option it reads).
func (c *Client) StreamTaskEvents(ctx context.Context, id, after string, opts ...CallOption) iter.Seq2[Event, error] {
	return c.stream(ctx, "/v1/tasks/"+segment(id)+"/events", after, callOf(opts).kinds)
}

// StreamSessionEvents follows a session's event log; see StreamTaskEvents.
func (c *Client) StreamSessionEvents(ctx context.Context, id, after string, opts ...CallOption) iter.Seq2[Event, error] {
	return c.stream(ctx, "/v1/sessions/"+segment(id)+"/events", after, callOf(opts).kinds)
}

// errStreamEnded is a stream the server ended: transient, as the log goes
// on.
var errStreamEnded = fmt.Errorf("taskhook: the event stream ended: %w", io.EOF)

func (c *Client) stream(ctx context.Context, path, after string, kinds []string) iter.Seq2[Event, error] {
	if len(kinds) > 0 {
		q := url.Values{}
		setKinds(q, kinds)
		path += "?" + q.Encode()
	}
	return func(yield func(Event, error) bool) {
		hc := *c.http
		hc.Timeout = 0 // a stream lasts as long as ctx
		s := &eventStream{c: c, http: &hc, path: path, last: after, yield: yield}
		r := retrier{policy: newRetryPolicy(0, 0)}
		for {
			delivered, err := s.follow(ctx)
			if s.stopped {
				return
			}
			if delivered {
				r.reset() // the backoff grows only while no connection gets anywhere
			}
			if err := r.wait(ctx, err); err != nil {
				if ctx.Err() == nil {
					yield(Event{}, err)
				}
				return
			}
		}
	}
}

// eventStream is the state of one stream across its connections.
type eventStream struct {
	c       *Client
	http    *http.Client
	path    string
	last    string // the id of the last event delivered: where a reconnect resumes
	yield   func(Event, error) bool
	stopped bool // the loop broke
}

// follow opens one connection and yields its events. It returns whether it
// delivered any, and why the connection ended.
func (s *eventStream) follow(ctx context.Context) (delivered bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.baseURL+s.path, nil)
	if err != nil {
		return false, fmt.Errorf("taskhook: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", userAgent)
	if s.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.token)
	}
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("taskhook: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, s.c.decodeError(resp)
	}
	return s.read(resp.Body)
}

// read yields each event of one connection until it ends or the loop
// breaks.
func (s *eventStream) read(body io.Reader) (delivered bool, err error) {
	sc := bufio.NewScanner(body)
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
				return delivered, fmt.Errorf("taskhook: decode a streamed event: %w", err)
			}
			s.last, delivered = ev.ID, true
			if !s.yield(ev, nil) {
				s.stopped = true
				return delivered, nil
			}
		case strings.HasPrefix(line, "data: "):
			data.WriteString(strings.TrimPrefix(line, "data: "))
		}
	}
	if err := sc.Err(); err != nil {
		return delivered, fmt.Errorf("taskhook: read the event stream: %w", err)
	}
	return delivered, errStreamEnded
}
