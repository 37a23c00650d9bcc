package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/redis/go-redis/v9"
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

// SlackMessage reads the message a Slack endpoint shows a task in; found is
// false when none was posted.
func (s *Store) SlackMessage(ctx context.Context, p int, taskID, endpointID string) (m SlackMessage, found bool, err error) {
	raw, err := s.RDB.HGet(ctx, s.Keys.Task(p, taskID), "slk:"+endpointID).Bytes()
	if errors.Is(err, redis.Nil) {
		return SlackMessage{}, false, nil
	}
	if err != nil {
		return SlackMessage{}, false, unavailable(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return SlackMessage{}, false, nil // unreadable: treated as none
	}
	return m, true, nil
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
