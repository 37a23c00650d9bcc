package store

import (
	"context"
	"encoding/json"
)

// SlackMessage is the Slack message that shows a task to one Slack
// endpoint: where it is and which revision of the task it shows.
type SlackMessage struct {
	Channel  string          `json:"channel"`
	TS       string          `json:"ts"`
	Revision int64           `json:"revision"`
	Asked    json.RawMessage `json:"asked,omitempty"` // every request the message has shown (JSON array)
}

var parseSlackMessage = replies[bool]{
	"ok":    func(scriptReply) (bool, error) { return true, nil },
	"gone":  func(scriptReply) (bool, error) { return false, nil },
	"stale": func(scriptReply) (bool, error) { return false, nil },
}.parser("slack_message")

// SlackView reads, in one round trip, a task's record (nil when it is gone)
// and the message a Slack endpoint shows it in; found is false when none was
// posted.
func (s *Store) SlackView(ctx context.Context, p int, taskID, endpointID string) (task []byte, m SlackMessage, found bool, err error) {
	v, err := s.readRecord(ctx, s.Keys.Task(p, taskID), "json", "slk:"+endpointID)
	if err != nil {
		return nil, SlackMessage{}, false, err
	}
	if j, ok := v[0].(string); ok {
		task = []byte(j)
	}
	if raw, ok := v[1].(string); ok && json.Unmarshal([]byte(raw), &m) == nil { // unreadable: treated as none
		found = true
	}
	return task, m, found, nil
}

// RecordSlackMessage keeps the message a Slack endpoint shows a task in,
// unless the task is gone or a newer revision is recorded already.
func (s *Store) RecordSlackMessage(ctx context.Context, p int, taskID, endpointID string, m SlackMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = s.scripts.slackMessage.run(ctx, s, []string{s.Keys.Task(p, taskID)}, endpointID, b, m.Revision)
	return err
}
