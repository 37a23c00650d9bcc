package handlers

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/tasks"
)

var fuzzKinds = []tasks.CommandKind{
	tasks.CmdProgress, tasks.CmdMessage, tasks.CmdRequireInput, tasks.CmdRespond,
	tasks.CmdComplete, tasks.CmdFail, tasks.CmdCancel,
}

// FuzzDecodeCommand feeds arbitrary bodies to every command decoder and the
// state machine behind it: nothing panics, and every refusal is a 400 with a
// contract code or a domain error the handlers map.
func FuzzDecodeCommand(f *testing.F) {
	for _, seed := range []string{
		`{}`, ``, `{"statusMessage":"x","progress":{"a":[1,2]}}`, `{"text":"hi","data":null}`,
		`{"requests":[{"prompt":"ok?","options":[{"id":"a","label":"A"}]}]}`,
		`{"responses":[{"requestId":"q","optionId":"a"}]}`, `{"result":[1,"x",{}]}`,
		`{"error":{"message":"m","data":1}}`, `{"reason":"r"}`, `{"a":1}`, `[`, `{"text":7}`, `{} {}`,
		`{"requests":[{"prompt":"","options":[{"id":"","label":""}]}]}`, "\xff\xfe",
	} {
		for i := range fuzzKinds {
			f.Add(uint8(i), []byte(seed))
		}
	}
	base := tasks.Task{TaskID: "task_x", Status: tasks.InputRequired, Revision: 3,
		InputRequests: []tasks.InputRequest{{RequestID: "q", Kind: "ask", Prompt: "ok?",
			Options: []tasks.Option{{ID: "a", Label: "A"}}}}}
	f.Fuzz(func(t *testing.T, k uint8, body []byte) {
		kind := fuzzKinds[int(k)%len(fuzzKinds)]
		cmd, err := decodeCommand(kind, body)
		if err != nil {
			var api *APIError
			if !errors.As(err, &api) || api.Status != http.StatusBadRequest ||
				(api.Code != CodeInvalidJSON && api.Code != CodeInvalidRequest) {
				t.Fatalf("decode %s: %v is not a 400 invalid_json/invalid_request", kind, err)
			}
			return
		}
		if kind == tasks.CmdRequireInput {
			cmd.Requests = tasks.PrepareRequests(cmd.Requests, func() string { return "req_f" })
		}
		if _, err := tasks.Apply(base, cmd, time.Unix(0, 0)); err != nil && toAPIError(&tasks.StateError{Err: err}) == nil {
			if toAPIError(err) == nil {
				t.Fatalf("apply %s: %v maps to no status", kind, err)
			}
		}
	})
}

// FuzzDecodeCreate does the same for the create bodies.
func FuzzDecodeCreate(f *testing.F) {
	for _, seed := range []string{`{"sessionId":"ses_x","input":{"a":1},"ttlMs":5000}`, `{"metadata":{}}`, `{"notify":[1]}`, `{"ttlMs":"x"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ti tasks.CreateInput
		var si sessions.CreateInput
		for _, dst := range []any{&ti, &si} {
			if err := DecodeJSON(body, dst); err != nil {
				var api *APIError
				if !errors.As(err, &api) || api.Status != http.StatusBadRequest {
					t.Fatalf("decode: %v is not a 400", err)
				}
			}
		}
	})
}
