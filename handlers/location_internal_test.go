package handlers

import (
	"net/http/httptest"
	"testing"
)

// Location names the created record whatever place its id has in the
// reply: read from the front when it leads, else from the decoded object.
func TestLocationNamesTheCreatedRecord(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"taskId":"task_1","sessionId":"ses_1","owner":"a"}`, "/v1/tasks/task_1"},
		{`{"owner":"a","taskId":"task_2"}`, "/v1/tasks/task_2"},
		{`{"taskId":"task_\u0033","owner":"a"}`, "/v1/tasks/task_3"},
		{` {"taskId":"task_4"}`, "/v1/tasks/task_4"},
		{`{"taskId":""}`, ""},
		{`{"sessionId":"ses_1"}`, ""},
		{`{"taskId":"task_6`, ""},
		{`{"taskId":7}`, ""},
	} {
		w := httptest.NewRecorder()
		setLocation(w, "/v1/tasks/", []byte(c.raw), "taskId")
		if got := w.Header().Get("Location"); got != c.want {
			t.Errorf("%s: Location %q, want %q", c.raw, got, c.want)
		}
	}
}
