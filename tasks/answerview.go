package tasks

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/tokens"
	"github.com/taskhook/taskhook/waits"
)

// Where an answer URL's request stands, as its holder may see it.
const (
	AnswerOpen     = "open"     // waiting for an answer
	AnswerAnswered = "answered" // answered, through any channel
	AnswerClosed   = "closed"   // the task ended before an answer
)

// AnswerView is what the holder of an answer URL may see: that one request
// and how it stands, the task's label and kind to recognise it by, and
// nothing else of the task.
type AnswerView struct {
	TaskID        string       `json:"taskId"`
	TaskKind      string       `json:"taskKind,omitempty"`
	TaskLabel     string       `json:"taskLabel,omitempty"`
	RequestID     string       `json:"requestId"`
	Status        string       `json:"status"`
	Prompt        string       `json:"prompt"`
	Display       string       `json:"display,omitempty"`
	Options       []Option     `json:"options"`
	AllowFreeform bool         `json:"allowFreeform"`
	ExpiresAt     string       `json:"expiresAt,omitempty"`
	Answer        *ShownAnswer `json:"answer,omitempty"`
}

// ShownAnswer is a recorded answer as the holder of an answer URL sees it:
// what was answered, when and through what, but not by whom. A link may be
// forwarded, and its holder need not learn the principals (or the Slack
// users) behind a task.
type ShownAnswer struct {
	Answer
	AnsweredAt events.Time `json:"answeredAt"`
	Via        string      `json:"via"`
}

// TakesText reports whether the request takes a free-text answer.
func (v AnswerView) TakesText() bool {
	return v.AllowFreeform || v.Display == wire.DisplayText
}

// maxViewLookups bounds the pages of the task's input.requested events read
// to find a request that is no longer open (its prompt is then only in the
// log): a view never costs more than this many reads of it.
const maxViewLookups = 8

// ViewAnswer shows the request an answer token names, without answering it:
// open, answered (with the answer recorded, whoever gave it) or closed.
// problem.ErrNotFound: no such token; ErrInputClosed: the token is known but
// its task is gone.
func (s *Service) ViewAnswer(ctx context.Context, token string) (AnswerView, error) {
	part, ok := tokens.Parse(token, AnswerTokenPrefix, s.store.Partitions)
	if !ok {
		return AnswerView{}, problem.ErrNotFound
	}
	ref, _, err := s.resolveAnswer(ctx, part, tokens.Hash(token), true)
	if err != nil {
		return AnswerView{}, err
	}
	// Read the stored task, not this replica's snapshot: a page opened right
	// after an answer through another replica must show it.
	t, _, err := s.load(ctx, part, ref.TaskID)
	if errors.Is(err, problem.ErrNotFound) {
		return AnswerView{}, ErrInputClosed
	}
	if err != nil {
		return AnswerView{}, err
	}
	v := AnswerView{TaskID: t.TaskID, TaskKind: t.Kind, TaskLabel: t.Label, RequestID: ref.RequestID, Status: AnswerClosed}
	req, open := openRequest(t, ref.RequestID)
	if open {
		v.Status = AnswerOpen
	} else {
		for i := range t.InputResponses {
			if t.InputResponses[i].RequestID == ref.RequestID {
				r := t.InputResponses[i]
				v.Status, v.Answer = AnswerAnswered, &ShownAnswer{Answer: r.Answer, AnsweredAt: r.AnsweredAt, Via: r.Via}
				break
			}
		}
		if req, err = s.askedRequest(ctx, part, t.TaskID, t.SessionID, ref.RequestID); err != nil {
			return AnswerView{}, err
		}
	}
	v.Prompt, v.Display, v.Options = req.Prompt, req.Display, req.Options
	v.AllowFreeform, v.ExpiresAt = req.AllowFreeform, req.ExpiresAt
	if v.Options == nil {
		v.Options = []Option{}
	}
	return v, nil
}

// openRequest is the request while it waits for an answer.
func openRequest(t Task, requestID string) (InputRequest, bool) {
	if t.Status != InputRequired {
		return InputRequest{}, false
	}
	for _, r := range t.InputRequests {
		if r.RequestID == requestID {
			return r, true
		}
	}
	return InputRequest{}, false
}

// askedRequest finds a request that left the task's record (answered, or
// its task ended) in the input.requested events of the task's log. A request
// it does not find within maxViewLookups reads is shown with no prompt.
func (s *Service) askedRequest(ctx context.Context, part int, taskID, sessionID, requestID string) (InputRequest, error) {
	q := waits.LogQuery{Limit: 100, Kinds: waits.Kinds{wire.EventInputRequested}}
	log := s.store.Source(s.store.Keys.TaskEvents(part, taskID, sessionID))
	for range maxViewLookups {
		page, err := s.waiters.ReadLog(ctx, nil, log, q)
		if err != nil {
			return InputRequest{}, err
		}
		for _, e := range page.Entries {
			var ev struct {
				Data struct {
					Requests []InputRequest `json:"requests"`
				} `json:"data"`
			}
			if json.Unmarshal(e.JSON, &ev) != nil {
				continue
			}
			for _, r := range ev.Data.Requests {
				if r.RequestID == requestID {
					return r, nil
				}
			}
		}
		if page.Cursor == "" || page.Cursor == q.After {
			break
		}
		q.After = page.Cursor
	}
	return InputRequest{}, nil
}
