package client

import (
	"context"
	"errors"
	"time"
)

// Asked is how a question asked with Ask came out: answered, or not, because
// its task ended first. Task is the task as it was then.
type Asked struct {
	// Answer is the answer recorded for the request; nil when the task
	// ended before anybody answered.
	Answer *InputResponse
	Task   *Task
}

// askWait is how long each long-poll of Ask waits (the server's longest).
const askWait = 60 * time.Second

// Ask asks one question and blocks until it is answered (through any
// channel: the console, an answer URL, Slack, POST .../input) or the task
// ends, or ctx ends. It adds the request (opts apply to that call only:
// with WithIdempotencyKey a retried Ask does not ask twice), then
// long-polls the task, woken only by input.resolved and task.terminal, so
// progress and messages cost it nothing. A request without a RequestID gets
// the id the server fills.
func (c *Client) Ask(ctx context.Context, taskID string, req InputRequest, opts ...CallOption) (*Asked, error) {
	t, err := c.RequireInput(ctx, taskID, []InputRequest{req}, opts...)
	if err != nil {
		return nil, err
	}
	id := req.RequestID
	if id == "" {
		if len(t.InputRequests) == 0 {
			return nil, errors.New("taskhook: ask: the task answered shows no open request")
		}
		id = t.InputRequests[len(t.InputRequests)-1].RequestID
	}
	wake := WithKinds(EventInputResolved, EventTaskTerminal)
	for {
		for i := range t.InputResponses {
			if t.InputResponses[i].RequestID == id {
				answer := t.InputResponses[i]
				return &Asked{Answer: &answer, Task: t}, nil
			}
		}
		if t.Terminal() {
			return &Asked{Task: t}, nil
		}
		next, err := c.WaitTask(ctx, taskID, t.Revision, askWait, wake)
		if err != nil {
			return nil, err
		}
		t = next
	}
}
