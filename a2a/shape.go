package a2a

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/tasks"
)

// resultArtifact is the id of the artifact that holds a completed task's
// result.
const resultArtifact a2a.ArtifactID = "result"

// state is a task's status in A2A's words: a task waiting for input waits
// for a sign-in (AUTH_REQUIRED) while a sign-in request is open.
func state(t tasks.Task) a2a.TaskState {
	switch t.Status {
	case tasks.InputRequired:
		for _, r := range t.InputRequests {
			if r.Kind == wire.KindAuthorization {
				return a2a.TaskStateAuthRequired
			}
		}
		return a2a.TaskStateInputRequired
	case tasks.Completed:
		return a2a.TaskStateCompleted
	case tasks.Failed:
		return a2a.TaskStateFailed
	case tasks.Cancelled:
		return a2a.TaskStateCanceled
	}
	return a2a.TaskStateWorking
}

// statuses are the task statuses an A2A state lists; none for a state no
// task of ours is ever in (submitted, rejected).
func statuses(s a2a.TaskState) ([]tasks.Status, bool) {
	switch s {
	case a2a.TaskStateUnspecified:
		return nil, true
	case a2a.TaskStateWorking:
		return []tasks.Status{tasks.Working}, true
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		return []tasks.Status{tasks.InputRequired}, true
	case a2a.TaskStateCompleted:
		return []tasks.Status{tasks.Completed}, true
	case a2a.TaskStateFailed:
		return []tasks.Status{tasks.Failed}, true
	case a2a.TaskStateCanceled:
		return []tasks.Status{tasks.Cancelled}, true
	case a2a.TaskStateSubmitted, a2a.TaskStateRejected:
		return []tasks.Status{}, true
	}
	return nil, false
}

// info is the task as A2A names it.
func info(t tasks.Task) a2a.TaskInfo {
	return a2a.TaskInfo{TaskID: a2a.TaskID(t.TaskID), ContextID: t.SessionID}
}

// shape is a task in A2A's shape: its state and what it says (the open
// questions, the latest progress text or why it ended), its result as an
// artifact once completed, and history when given.
func shape(t tasks.Task, history []*a2a.Message) *a2a.Task {
	out := &a2a.Task{
		ID: a2a.TaskID(t.TaskID), ContextID: t.SessionID,
		Status:   status(t),
		History:  history,
		Metadata: map[string]any{"skill": t.Kind, "revision": t.Revision},
	}
	if a := artifact(t); a != nil {
		out.Artifacts = []*a2a.Artifact{a}
	}
	return out
}

// status is the task's A2A status as of its last change.
func status(t tasks.Task) a2a.TaskStatus {
	at := t.LastUpdatedAt.Time
	return a2a.TaskStatus{State: state(t), Message: statusMessage(t), Timestamp: &at}
}

// artifact is a completed task's result, in a data part; nil for any
// other task.
func artifact(t tasks.Task) *a2a.Artifact {
	if t.Status != tasks.Completed || len(t.Result) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(t.Result, &v); err != nil {
		return nil
	}
	return &a2a.Artifact{ID: resultArtifact, Name: "result", Parts: a2a.ContentParts{a2a.NewDataPart(v)}}
}

// statusMessage is what the task says to its caller now: the open
// questions (a text listing each prompt and its options, and a data part
// with the requests as the API shows them, answerUrl included), why it
// failed or was cancelled, or its latest progress text.
func statusMessage(t tasks.Task) *a2a.Message {
	var parts a2a.ContentParts
	switch t.Status {
	case tasks.InputRequired:
		if len(t.InputRequests) == 0 {
			break
		}
		parts = a2a.ContentParts{a2a.NewTextPart(questions(t.InputRequests)),
			a2a.NewDataPart(map[string]any{"inputRequests": requestsData(t.InputRequests)})}
	case tasks.Failed:
		if t.Error != nil {
			parts = a2a.ContentParts{a2a.NewTextPart(t.Error.Message)}
			if len(t.Error.Data) > 0 {
				var v any
				if json.Unmarshal(t.Error.Data, &v) == nil {
					parts = append(parts, a2a.NewDataPart(map[string]any{"error": v}))
				}
			}
		}
	case tasks.Cancelled:
		if t.CancelReason != "" {
			parts = a2a.ContentParts{a2a.NewTextPart(t.CancelReason)}
		}
	default:
		if t.StatusMessage != "" {
			parts = a2a.ContentParts{a2a.NewTextPart(t.StatusMessage)}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	m := a2a.NewMessageForTask(a2a.MessageRoleAgent, info(t), parts...)
	m.ID = t.TaskID + "-r" + strconv.FormatInt(t.Revision, 10)
	return m
}

// questions is the open requests as text a person reads: each prompt, its
// options by id and label, where a free answer is allowed, and the link
// that answers it (or signs in) in a browser.
func questions(reqs []tasks.InputRequest) string {
	var b strings.Builder
	for i, r := range reqs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.Prompt)
		for _, o := range r.Options {
			fmt.Fprintf(&b, "\n- %s: %s", o.ID, o.Label)
		}
		switch {
		case r.Kind == wire.KindAuthorization && r.AuthorizationURL != "":
			fmt.Fprintf(&b, "\nSign in: %s", r.AuthorizationURL)
		case r.AllowFreeform || r.Display == wire.DisplayText:
			b.WriteString("\n(answer in your own words)")
		}
		if r.AnswerURL != "" && r.Kind != wire.KindAuthorization {
			fmt.Fprintf(&b, "\nAnswer in a browser: %s", r.AnswerURL)
		}
	}
	return b.String()
}

// requestsData is the open requests as a data part's value: the API's
// shape, as plain JSON values.
func requestsData(reqs []tasks.InputRequest) any {
	raw, err := json.Marshal(reqs)
	if err != nil {
		return nil
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}
