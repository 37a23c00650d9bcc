package handlers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"

	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/strictjson"
	"github.com/taskhook/taskhook/tasks"
)

var fuzzKinds = []tasks.CommandKind{
	tasks.CmdProgress, tasks.CmdMessage, tasks.CmdRequireInput, tasks.CmdRespond,
	tasks.CmdComplete, tasks.CmdFail, tasks.CmdCancel,
}

// FuzzDecodeCommand feeds arbitrary bodies to every command decoder and the
// state machine behind it: nothing panics, every refusal is a 400 with a
// contract code or a domain error the handlers map, and what is taken holds
// only text a strict reader takes (see checkDecoded).
func FuzzDecodeCommand(f *testing.F) {
	for _, seed := range []string{
		`{}`, ``, `{"statusMessage":"x","progress":{"a":[1,2]}}`, `{"text":"hi","data":null}`,
		`{"requests":[{"prompt":"ok?","options":[{"id":"a","label":"A"}]}]}`,
		`{"responses":[{"requestId":"q","optionId":"a"}]}`, `{"result":[1,"x",{}]}`,
		`{"error":{"message":"m","data":1}}`, `{"reason":"r"}`, `{"a":1}`, `[`, `{"text":7}`, `{} {}`,
		`{"requests":[{"prompt":"","options":[{"id":"","label":""}]}]}`, "\xff\xfe",
		"{\"progress\":{\"p\":\"\xff\"}}", `{"text":"x","data":"\ud800"}`, `{"result":[[[[[[[[[[1]]]]]]]]]]}`,
		`{"TEXT":"x"}`, `{"requests":[{"PROMPT":"x"}]}`, `{"error":{"MESSAGE":"m"}}`, `{"text":"\ud83d\ude00"}`,
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
			api := toAPIError(err)
			if api == nil || api.Status != http.StatusBadRequest ||
				(api.Code != wire.CodeInvalidJSON && api.Code != wire.CodeInvalidRequest) {
				t.Fatalf("decode %s: %v is not a 400 invalid_json/invalid_request", kind, err)
			}
			return
		}
		checkDecoded(t, body, cmd)
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

// FuzzDecodeCreate does the same for the other bodies.
func FuzzDecodeCreate(f *testing.F) {
	for _, seed := range []string{
		`{"sessionId":"ses_x","input":{"a":1},"ttlMs":5000}`, `{"metadata":{}}`, `{"notify":[1]}`, `{"ttlMs":"x"}`,
		"{\"input\":\"\xc3\"}", `{"metadata":{"\udc00":1}}`, `{"SESSIONID":"ses_x"}`, `{"input":[[[[[[[[[[[[]]]]]]]]]]]]}`,
		`{"verify":{"scheme":"slack","SECRET":"s"}}`, `{"eventIds":["1-0"]}`, `{"optionId":"a","text":"\u00e9"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dst := range []any{&tasks.CreateInput{}, &sessions.CreateInput{}, &hooks.CreateInput{},
			&hooks.AckInput{}, &tasks.AnswerInput{}, &reasonBody{}} {
			if err := strictjson.Decode(body, dst); err != nil {
				if api := toAPIError(err); api == nil || api.Status != http.StatusBadRequest {
					t.Fatalf("decode: %v is not a 400", err)
				}
				continue
			}
			checkDecoded(t, body, dst)
		}
	})
}

// checkDecoded checks what a body decoded into, as a strict client would read
// it back: valid UTF-8 (json.RawMessage fields keep their bytes as they came),
// no escaped surrogate without its other half and no U+FFFD the body did not
// hold itself (Go's decoder makes one of each), and no nesting deeper than
// strictjson.MaxDepth.
func checkDecoded(t *testing.T, body []byte, v any) {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("the decoded value does not encode: %v", err)
	}
	if !utf8.Valid(out) {
		t.Fatalf("the decoded value holds invalid UTF-8: %q", out)
	}
	lower := bytes.ToLower(body)
	bodyHasReplacement := bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(lower, []byte(`\ufffd`))
	dec := json.NewDecoder(bytes.NewReader(out))
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the decoded value does not read back: %v (%q)", err, out)
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				depth++
			} else {
				depth--
			}
			if depth > strictjson.MaxDepth {
				t.Fatalf("the decoded value nests deeper than %d: %q", strictjson.MaxDepth, out)
			}
		case string:
			if strings.ContainsRune(tok, utf8.RuneError) && !bodyHasReplacement {
				t.Fatalf("the decoded value holds U+FFFD the body did not: %q from %q", out, body)
			}
		}
	}
}
