package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/waits"
)

// historyPages bounds the log pages one history reads (100 messages each).
const historyPages = 10

// dated is a message of a task's history and when it was said.
type dated struct {
	at  time.Time
	msg *a2a.Message
}

// history is the task's last n messages, oldest first: what the executor
// posted (task.message, role agent) and the answers given (role user).
func (h *handler) history(ctx context.Context, p authz.Principal, t tasks.Task, n int) ([]*a2a.Message, error) {
	var all []dated
	after := ""
	for range historyPages {
		page, err := h.tasks.Events(ctx, p, t.TaskID, waits.LogQuery{After: after, Limit: 100, Kinds: waits.Kinds{wire.EventTaskMessage}})
		if err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			var ev struct {
				logEvent
				At time.Time `json:"at"`
			}
			if json.Unmarshal(e.JSON, &ev) != nil {
				continue
			}
			all = append(all, dated{ev.At, posted(t, ev.Revision, ev.Data.Text, ev.Data.Data)})
		}
		if len(page.Entries) == 0 || page.Cursor == after {
			break
		}
		after = page.Cursor
	}
	for i, r := range t.InputResponses {
		all = append(all, dated{r.AnsweredAt.Time, answered(t, i, r)})
	}
	slices.SortStableFunc(all, func(a, b dated) int { return a.at.Compare(b.at) })
	if len(all) > n {
		all = all[len(all)-n:]
	}
	out := make([]*a2a.Message, len(all))
	for i, d := range all {
		out[i] = d.msg
	}
	return out, nil
}

// posted is a message the executor posted, as an agent message: its text,
// and its data in a data part.
func posted(t tasks.Task, revision int64, text string, data json.RawMessage) *a2a.Message {
	parts := a2a.ContentParts{a2a.NewTextPart(text)}
	if len(data) > 0 {
		var v any
		if json.Unmarshal(data, &v) == nil {
			parts = append(parts, a2a.NewDataPart(v))
		}
	}
	m := a2a.NewMessageForTask(a2a.MessageRoleAgent, info(t), parts...)
	m.ID = t.TaskID + "-m" + strconv.FormatInt(revision, 10)
	return m
}

// answered is an answer as the user message that gave it: the text or the
// option's label, and the answer itself in a data part.
func answered(t tasks.Task, i int, r tasks.InputResponse) *a2a.Message {
	text := cmp.Or(r.Text, r.OptionID, r.Action)
	m := a2a.NewMessageForTask(a2a.MessageRoleUser, info(t), a2a.NewTextPart(text),
		a2a.NewDataPart(map[string]any{"requestId": r.RequestID, "optionId": r.OptionID, "text": r.Text,
			"action": cmp.Or(r.Action, wire.ActionAccept), "via": r.Via}))
	m.ID = t.TaskID + "-a" + strconv.Itoa(i+1)
	return m
}
