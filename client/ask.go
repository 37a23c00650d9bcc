package client

import (
	"context"
	"errors"
	"time"
)

// Asked is how a question asked with Ask came out: answered, or not, because
// its task ended first. Task is the task as it was then.
type Asked struct {
	// Answer is the answer recorded for the request, with who gave it, when
	// and through what; nil when the task ended before anybody answered.
	Answer *InputResponse
	Task   *Task
}

// Question is a question StartAsk asked, not yet waited for.
type Question struct {
	// Request is the request as the server recorded it: with its
	// RequestID and, for a question (kind ask), the AnswerURL a person can
	// answer it at without a token. A request a retried StartAsk finds
	// answered already is shown as it was sent, with its RequestID and no
	// AnswerURL.
	Request InputRequest
	// Task is the task as the ask left it.
	Task *Task

	c *Client
}

// askWait is how long each long-poll of Wait waits (the server's longest).
const askWait = 60 * time.Second

// Ask asks one question and blocks until it is answered (through any
// channel: the console, an answer URL, Slack, POST .../input) or the task
// ends, or ctx ends. It is StartAsk then Wait: use them to hand the
// question's AnswerURL to somebody before waiting.
func (c *Client) Ask(ctx context.Context, taskID string, req InputRequest, opts ...CallOption) (*Asked, error) {
	q, err := c.StartAsk(ctx, taskID, req, opts...)
	if err != nil {
		return nil, err
	}
	return q.Wait(ctx)
}

// StartAsk adds the request to the task and returns at once, with the
// request as recorded (its AnswerURL included), for the caller to pass on
// before it waits with Wait. opts apply to that call only: with
// WithIdempotencyKey a retried StartAsk does not ask twice. A request
// without a RequestID gets the id the server fills.
func (c *Client) StartAsk(ctx context.Context, taskID string, req InputRequest, opts ...CallOption) (*Question, error) {
	t, err := c.RequireInput(ctx, taskID, []InputRequest{req}, opts...)
	if err != nil {
		return nil, err
	}
	q := &Question{Request: req, Task: t, c: c}
	if req.RequestID == "" {
		if len(t.InputRequests) == 0 {
			return nil, errors.New("taskhook: ask: the task answered shows no open request")
		}
		q.Request = t.InputRequests[len(t.InputRequests)-1]
		return q, nil
	}
	for _, r := range t.InputRequests {
		if r.RequestID == req.RequestID {
			q.Request = r
		}
	}
	return q, nil
}

// Wait blocks until the question is answered or its task ends, or ctx
// ends. It long-polls the task, woken only by input.resolved and
// task.terminal, so progress and messages cost it nothing.
func (q *Question) Wait(ctx context.Context) (*Asked, error) {
	t, id := q.Task, q.Request.RequestID
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
		next, err := q.c.WaitTask(ctx, t.TaskID, t.Revision, askWait, wake)
		if err != nil {
			return nil, err
		}
		t = next
	}
}
