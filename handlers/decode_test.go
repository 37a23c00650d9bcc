package handlers

import (
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"

	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/strictjson"
	"github.com/taskhook/taskhook/tasks"
)

// Every route's body is decoded by strictjson.Decode, and its refusals are
// answered through toAPIError: these tests hold each body the routes take
// to the strict rules, and each refusal to its answer.

// bodyTargets are the values every route decodes its body into.
var bodyTargets = map[string]func() any{
	"task":          func() any { return &tasks.CreateInput{} },
	"session":       func() any { return &sessions.CreateInput{} },
	"hook":          func() any { return &hooks.CreateInput{} },
	"ack":           func() any { return &hooks.AckInput{} },
	"answer":        func() any { return &tasks.AnswerInput{} },
	"reason":        func() any { return &reasonBody{} },
	"progress":      func() any { return &progressBody{} },
	"message":       func() any { return &messageBody{} },
	"requests":      func() any { return &inputRequestsBody{} },
	"input":         func() any { return &inputBody{} },
	"complete":      func() any { return &completeBody{} },
	"fail":          func() any { return &failBody{} },
	"cancel":        func() any { return &cancelBody{} },
	"close":         func() any { return &struct{}{} },
	"free (a map)":  func() any { return &map[string]any{} },
	"free (an any)": func() any { var v any; return &v },
}

type refusal struct {
	target, body string
	status       int
	code, field  string
	message      string // a part of the detail's message
}

func checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		err := strictjson.Decode([]byte(c.body), bodyTargets[c.target]())
		api := toAPIError(err)
		if api == nil {
			t.Errorf("%s %q: %v, want a %d %s", c.target, c.body, err, c.status, c.code)
			continue
		}
		if api.Status != c.status || api.Code != c.code {
			t.Errorf("%s %q: %d %s (%s), want %d %s", c.target, c.body, api.Status, api.Code, api.Message, c.status, c.code)
			continue
		}
		if c.code != wire.CodeInvalidRequest {
			continue
		}
		d := api.Extra["details"].([]Detail)
		if d[0].Field != c.field || !strings.Contains(d[0].Message, c.message) {
			t.Errorf("%s %q: field %q (%s), want %q (...%s...)", c.target, c.body, d[0].Field, d[0].Message, c.field, c.message)
		}
	}
}

func checkAccepted(t *testing.T, target string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if err := strictjson.Decode([]byte(b), bodyTargets[target]()); err != nil {
			t.Errorf("%s %q: %v", target, b, err)
		}
	}
}

// Invalid UTF-8 is refused wherever it is: in a value kept as raw JSON (which
// would be stored and echoed as it came), in a plain string (which Go would
// silently turn into U+FFFD), in a key; so is an escaped surrogate without
// its other half.
func TestDecodeJSONRefusesInvalidText(t *testing.T) {
	t.Parallel()
	const utf8Msg, surrogateMsg = "is not valid UTF-8", "unpaired UTF-16 surrogate"
	checkRefusals(t, []refusal{
		{"task", `{"sessionId":"ses_x","input":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "input", utf8Msg},
		{"task", `{"sessionId":"ses_x","input":{"a":["ok","` + "a\xc3" + `"]}}`, 400, wire.CodeInvalidRequest, "input.a[1]", utf8Msg},
		{"task", `{"sessionId":"ses_x","metadata":{"k":"` + "\xed\xa0\x80" + `"}}`, 400, wire.CodeInvalidRequest, "metadata.k", utf8Msg},
		{"task", `{"sessionId":"` + "ses_\xfe" + `"}`, 400, wire.CodeInvalidRequest, "sessionId", utf8Msg},
		{"task", `{"sessionId":"ses_x","label":"` + "\xc0\xaf" + `"}`, 400, wire.CodeInvalidRequest, "label", utf8Msg},
		{"task", `{"sessionId":"ses_x","notify":[{"url":"` + "\xff" + `"}]}`, 400, wire.CodeInvalidRequest, "notify[0].url", utf8Msg},
		{"session", `{"metadata":{"` + "\xff" + `":1}}`, 400, wire.CodeInvalidRequest, "metadata", "has a field name that is not valid UTF-8"},
		{"session", `{"` + "\xff" + `":1}`, 400, wire.CodeInvalidRequest, "body", "has a field name that is not valid UTF-8"},
		{"progress", `{"progress":{"p":"` + "\xff" + `"}}`, 400, wire.CodeInvalidRequest, "progress.p", utf8Msg},
		{"progress", `{"statusMessage":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "statusMessage", utf8Msg},
		{"message", `{"text":"hi","data":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "data", utf8Msg},
		{"message", `{"text":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "text", utf8Msg},
		{"complete", `{"result":[1,{"x":"` + "\x80" + `"}]}`, 400, wire.CodeInvalidRequest, "result[1].x", utf8Msg},
		{"fail", `{"error":{"message":"m","data":["` + "\xff" + `"]}}`, 400, wire.CodeInvalidRequest, "error.data[0]", utf8Msg},
		{"fail", `{"error":{"message":"` + "\xff" + `"}}`, 400, wire.CodeInvalidRequest, "error.message", utf8Msg},
		{"requests", `{"requests":[{"prompt":"ok"},{"prompt":"` + "\xff" + `"}]}`, 400, wire.CodeInvalidRequest, "requests[1].prompt", utf8Msg},
		{"requests", `{"requests":[{"prompt":"p","options":[{"id":"a","label":"` + "\xff" + `"}]}]}`, 400, wire.CodeInvalidRequest, "requests[0].options[0].label", utf8Msg},
		{"input", `{"responses":[{"requestId":"q","text":"` + "\xff" + `"}]}`, 400, wire.CodeInvalidRequest, "responses[0].text", utf8Msg},
		{"answer", `{"text":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "text", utf8Msg},
		{"hook", `{"verify":{"scheme":"slack","secret":"` + "\xff" + `"}}`, 400, wire.CodeInvalidRequest, "verify.secret", utf8Msg},
		{"hook", `{"response":{"status":200,"body":"` + "\xff" + `"}}`, 400, wire.CodeInvalidRequest, "response.body", utf8Msg},
		{"ack", `{"eventIds":["1-0","` + "\xff" + `"]}`, 400, wire.CodeInvalidRequest, "eventIds[1]", utf8Msg},
		{"reason", `{"reason":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "reason", utf8Msg},
		{"cancel", `{"reason":"` + "\xff" + `"}`, 400, wire.CodeInvalidRequest, "reason", utf8Msg},
		{"free (a map)", `{"a":{"b":"` + "\xff" + `"}}`, 400, wire.CodeInvalidRequest, "a.b", utf8Msg},
		// Escapes that decode to no character.
		{"message", `{"text":"\ud800"}`, 400, wire.CodeInvalidRequest, "text", surrogateMsg},
		{"message", `{"text":"a\udc00b"}`, 400, wire.CodeInvalidRequest, "text", surrogateMsg},
		{"message", `{"text":"\ud800\u0041"}`, 400, wire.CodeInvalidRequest, "text", surrogateMsg},
		{"message", `{"text":"\udbff"}`, 400, wire.CodeInvalidRequest, "text", surrogateMsg},
		{"message", `{"text":"x","data":{"k":"\uDFFF"}}`, 400, wire.CodeInvalidRequest, "data.k", surrogateMsg},
		{"session", `{"metadata":{"\ud800":1}}`, 400, wire.CodeInvalidRequest, "metadata", "has a field name that holds an unpaired"},
		// The first problem is the one named.
		{"message", `{"text":"` + "\xff" + `","data":"` + "\xfe" + `"}`, 400, wire.CodeInvalidRequest, "text", utf8Msg},
		// A syntax error anywhere makes it invalid_json.
		{"message", `{"text":"` + "\xff" + `",}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":"` + "\xff" + `"` + "\xff", 400, wire.CodeInvalidJSON, "", ""},
	})
	checkAccepted(t, "message",
		`{"text":"caf\u00e9 \ud83d\ude00 \\ud800 \\\ud83d\ude00"}`,
		`{"text":"café 😀 ✓","data":{"é":["😀","\u0000"]}}`,
		`{"text":"\uD83D\uDE00"}`,
	)
}

// Nesting deeper than strictjson.MaxDepth is refused, naming the field that
// holds it; a body exactly at the limit is taken.
func TestDecodeJSONRefusesDeepNesting(t *testing.T) {
	t.Parallel()
	nest := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
	deepObject := func(levels int) string {
		return strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels)
	}
	const msg = "deeper than 64 levels"
	checkRefusals(t, []refusal{
		{"task", `{"sessionId":"ses_x","input":` + nest(strictjson.MaxDepth) + `}`, 400, wire.CodeInvalidRequest, "input", msg},
		{"task", `{"sessionId":"ses_x","input":` + nest(9999) + `}`, 400, wire.CodeInvalidRequest, "input", msg},
		{"task", `{"sessionId":"ses_x","input":` + nest(20000) + `}`, 400, wire.CodeInvalidRequest, "input", msg},
		{"task", `{"sessionId":"ses_x","metadata":{"k":` + deepObject(strictjson.MaxDepth) + `}}`, 400, wire.CodeInvalidRequest, "metadata", msg},
		{"progress", `{"progress":` + deepObject(500) + `}`, 400, wire.CodeInvalidRequest, "progress", msg},
		{"fail", `{"error":{"message":"m","data":[1,` + nest(100) + `]}}`, 400, wire.CodeInvalidRequest, "error.data", msg},
		{"requests", `{"requests":[{"prompt":"p","options":[` + nest(strictjson.MaxDepth) + `]}]}`, 400, wire.CodeInvalidRequest, "requests[0].options[0]", msg},
		{"free (a map)", `{"a":` + nest(strictjson.MaxDepth) + `}`, 400, wire.CodeInvalidRequest, "a", msg},
		// Too deep and broken: invalid_json, however deep.
		{"task", `{"sessionId":"ses_x","input":` + strings.Repeat("[", 100000) + `}`, 400, wire.CodeInvalidJSON, "", ""},
		{"task", `{"input":` + nest(70) + `,}`, 400, wire.CodeInvalidJSON, "", ""},
	})
	// The body is level 1, so input may nest 63 levels.
	checkAccepted(t, "task", `{"sessionId":"ses_x","input":`+nest(strictjson.MaxDepth-1)+`}`,
		`{"sessionId":"ses_x","input":{"a":`+deepObject(strictjson.MaxDepth-2)+`}}`)
	checkAccepted(t, "free (an any)", deepObject(strictjson.MaxDepth))
}

// Field names match exactly: encoding/json alone would take any case (and
// Unicode folds such as U+017F for s and U+212A for k), so that SESSIONID
// after sessionId would override it.
func TestDecodeJSONMatchesFieldNamesExactly(t *testing.T) {
	t.Parallel()
	const msg = "is not a known field"
	checkRefusals(t, []refusal{
		{"task", `{"sessionId":"ses_a","SESSIONID":"ses_b"}`, 400, wire.CodeInvalidRequest, "SESSIONID", msg + " (names match exactly: sessionId)"},
		{"task", `{"SessionId":"ses_a"}`, 400, wire.CodeInvalidRequest, "SessionId", msg},
		{"task", `{"sessionId":"ses_a","ttlms":5}`, 400, wire.CodeInvalidRequest, "ttlms", msg},
		{"task", "{\"\u017fessionId\":\"ses_a\"}", 400, wire.CodeInvalidRequest, "\u017fessionId", msg},
		{"task", `{"\u017fessionId":"ses_a"}`, 400, wire.CodeInvalidRequest, "\u017fessionId", msg},
		{"task", "{\"sessionId\":\"ses_a\",\"\u212aind\":\"x\"}", 400, wire.CodeInvalidRequest, "\u212aind", msg},
		{"session", `{"Metadata":{}}`, 400, wire.CodeInvalidRequest, "Metadata", msg},
		{"requests", `{"requests":[{"prompt":"p"},{"PROMPT":"p"}]}`, 400, wire.CodeInvalidRequest, "requests[1].PROMPT", msg},
		{"requests", `{"requests":[{"prompt":"p","options":[{"ID":"a","label":"A"}]}]}`, 400, wire.CodeInvalidRequest, "requests[0].options[0].ID", msg},
		{"requests", `{"Requests":[]}`, 400, wire.CodeInvalidRequest, "Requests", msg},
		{"requests", `{"requests":[{"prompt":"p","answerUrl":"http://x"}]}`, 400, wire.CodeInvalidRequest, "requests[0].answerUrl", msg},
		{"fail", `{"error":{"MESSAGE":"m"}}`, 400, wire.CodeInvalidRequest, "error.MESSAGE", msg},
		{"input", `{"responses":[{"REQUESTID":"q","optionId":"a"}]}`, 400, wire.CodeInvalidRequest, "responses[0].REQUESTID", msg},
		{"hook", `{"verify":{"scheme":"slack","SECRET":"s"}}`, 400, wire.CodeInvalidRequest, "verify.SECRET", msg},
		{"hook", `{"response":{"Status":200}}`, 400, wire.CodeInvalidRequest, "response.Status", msg},
		{"hook", `{"TaskId":"task_x"}`, 400, wire.CodeInvalidRequest, "TaskId", msg},
		{"ack", `{"EventIds":["1-0"]}`, 400, wire.CodeInvalidRequest, "EventIds", msg},
		{"answer", `{"OptionId":"a"}`, 400, wire.CodeInvalidRequest, "OptionId", msg},
		{"reason", `{"Reason":"r"}`, 400, wire.CodeInvalidRequest, "Reason", msg},
		{"progress", `{"StatusMessage":"s"}`, 400, wire.CodeInvalidRequest, "StatusMessage", msg},
		{"message", `{"TEXT":"t"}`, 400, wire.CodeInvalidRequest, "TEXT", msg},
		{"complete", `{"Result":1}`, 400, wire.CodeInvalidRequest, "Result", msg},
		{"cancel", `{"reason":"r","REASON":"s"}`, 400, wire.CodeInvalidRequest, "REASON", msg},
		{"close", `{"x":1}`, 400, wire.CodeInvalidRequest, "x", msg},
		// A long unknown key is cut in the answer.
		{"message", `{"` + strings.Repeat("é", 40) + `":1}`, 400, wire.CodeInvalidRequest, strings.Repeat("é", 32) + "...", msg},
	})
	// Exact names, also written with escapes, and any names inside free JSON.
	checkAccepted(t, "task", `{"sessionId":"ses_a","kind":"k","input":{"SESSIONID":1,"Kind":[{"ID":2}]}}`,
		`{"sessi\u006fnId":"ses_a"}`)
	checkAccepted(t, "hook", `{"verify":{"scheme":"slack","secret":"s","toleranceSeconds":5},"response":{"status":200,"body":"b"}}`)
	checkAccepted(t, "free (a map)", `{"SESSIONID":1,"sessionId":2}`)

	var in tasks.CreateInput
	if err := strictjson.Decode([]byte(`{"sessionId":"ses_a","input":{"K":1},"ttlMs":5}`), &in); err != nil ||
		in.SessionID != "ses_a" || string(in.Input) != `{"K":1}` || *in.TTLMs != 5 {
		t.Fatalf("decoded %+v, %v", in, err)
	}
}

// Syntax errors stay invalid_json and the other refusals keep their codes.
func TestDecodeJSONSyntax(t *testing.T) {
	t.Parallel()
	checkRefusals(t, []refusal{
		{"message", `{"text":`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"x"} {}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"x"}]`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"x",}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"x" "data":1}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":'x'}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"a` + "\n" + `b"}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"\x"}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"text":"\u12"}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":01}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":-}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":1.}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":1e}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":tru}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":[1 2]}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":{"a"}}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"data":{1:2}}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `{"nope":1,}`, 400, wire.CodeInvalidJSON, "", ""},
		{"message", `[1]`, 400, wire.CodeInvalidRequest, "body", "must be a JSON object"},
		{"message", `{"text":7}`, 400, wire.CodeInvalidRequest, "text", "must be a string"},
		{"message", `{"nope":1}`, 400, wire.CodeInvalidRequest, "nope", "is not a known field"},
	})
	checkAccepted(t, "message", ``, ` { } `, "\t{\"text\" : \"x\" ,\r\n\"data\":[ -0.5e+3 , 1E-2, 0, true, false, null, {}, [] ] }\n")
}
