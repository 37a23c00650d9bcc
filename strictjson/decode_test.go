package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskhook/taskhook/problem"
)

// The rules, each on a target of its own; every route's own body is checked
// against them in package handlers (decode_test.go).

// refused is a body Decode refuses: a SyntaxError when field is "", else a
// ValidationError naming field, its message holding message.
type refused struct {
	body, field, message string
}

func checkRefused(t *testing.T, dst func() any, cases []refused) {
	t.Helper()
	for _, c := range cases {
		err := Decode([]byte(c.body), dst())
		var syntax *SyntaxError
		var invalid *problem.ValidationError
		switch {
		case c.field == "":
			if !errors.As(err, &syntax) {
				t.Errorf("%q: %v, want a SyntaxError", c.body, err)
			}
		case !errors.As(err, &invalid):
			t.Errorf("%q: %v, want a ValidationError of %s", c.body, err, c.field)
		case invalid.Field != c.field || !strings.Contains(invalid.Message, c.message):
			t.Errorf("%q: field %q (%s), want %q (...%s...)", c.body, invalid.Field, invalid.Message, c.field, c.message)
		}
	}
}

func checkTaken(t *testing.T, dst func() any, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if err := Decode([]byte(b), dst()); err != nil {
			t.Errorf("%q: %v", b, err)
		}
	}
}

func newTask() any { return &createTask{} }

// A body that is not one JSON value is a SyntaxError, whatever else is
// wrong with it; one that is JSON but no object, a ValidationError of the
// body. An empty body reads as {}.
func TestDecodeSyntax(t *testing.T) {
	t.Parallel()
	checkRefused(t, newTask, []refused{
		{`{"sessionId":`, "", ""},
		{`{"sessionId":"s"} {}`, "", ""},
		{`{"sessionId":"s"}]`, "", ""},
		{`{"sessionId":"s",}`, "", ""},
		{`{"kind":01}`, "", ""},
		{`{"kind":"` + "ÿ" + `",}`, "", ""},
		{`{"input":` + strings.Repeat("[", 100000) + `}`, "", ""},
		{`nope`, "", ""},
		{`[1`, "", ""},
		{`[1]`, "body", "must be a JSON object"},
		{`"text"`, "body", "must be a JSON object"},
		{`null`, "body", "must be a JSON object"},
	})
	if err := Decode([]byte(`{} {}`), newTask()); err == nil || err.Error() != "the body holds more than one JSON value" {
		t.Errorf("trailing data: %v", err)
	}
	if err := Decode([]byte(`{`), newTask()); err == nil || err.Error() != "the body is not valid JSON" {
		t.Errorf("a cut body: %v", err)
	}
	checkTaken(t, newTask, ``, " \t\r\n", ` { } `)
}

// Member names match a field's exactly; an unknown one is named, with the
// field it differs from only in case; names inside a value that takes any
// JSON, and a map's keys, are free.
func TestDecodeMatchesNamesExactly(t *testing.T) {
	t.Parallel()
	checkRefused(t, newTask, []refused{
		{`{"sessionId":"a","SESSIONID":"b"}`, "SESSIONID", "is not a known field (names match exactly: sessionId)"},
		{`{"sessi\u006FnID":"a"}`, "sessionID", "names match exactly: sessionId"},
		{`{"nope":1}`, "nope", "is not a known field"},
		{`{"notify":[{"url":"u","URL":"v"}]}`, "notify[0].URL", "is not a known field"},
		{"{\"\u212aind\":\"x\"}", "\u212aind", "is not a known field"},
	})
	checkTaken(t, newTask, `{"sessi\u006fnId":"a","input":{"SESSIONID":1},"metadata":{"Kind":[{"ID":2}]}}`)
	checkTaken(t, func() any { return &map[string]any{} }, `{"SESSIONID":1,"sessionId":2}`)
}

// Text is valid UTF-8 with no unpaired surrogate escape, in values and in
// names alike, wherever they are; the first problem is the one named.
func TestDecodeRefusesInvalidText(t *testing.T) {
	t.Parallel()
	const utf8Msg, surrogateMsg = "is not valid UTF-8", "holds an unpaired UTF-16 surrogate escape"
	checkRefused(t, newTask, []refused{
		{`{"sessionId":"` + "\xff" + `"}`, "sessionId", utf8Msg},
		{`{"input":{"a":["ok","` + "a\xc3" + `"]}}`, "input.a[1]", utf8Msg},
		{`{"metadata":{"` + "\xff" + `":1}}`, "metadata", "has a field name that " + utf8Msg},
		{`{"` + "\xff" + `":1}`, "body", "has a field name that " + utf8Msg},
		{`{"label":"\ud800"}`, "label", surrogateMsg},
		{`{"label":"a\udc00b"}`, "label", surrogateMsg},
		{`{"label":"\ud800\u0041"}`, "label", surrogateMsg},
		{`{"input":{"\udbff":1}}`, "input", "has a field name that " + surrogateMsg},
		{`{"label":"` + "\xff" + `","kind":"` + "\xfe" + `"}`, "label", utf8Msg},
	})
	checkTaken(t, newTask, `{"label":"caf\u00e9 \ud83d\ude00 \\ud800","input":{"é":["😀","\u0000"]}}`)
}

// Objects and arrays nest at most MaxDepth levels, the body being level 1;
// the field holding the deeper ones is named, where the target's shape
// still names it.
func TestDecodeRefusesDeepNesting(t *testing.T) {
	t.Parallel()
	nest := func(levels int) string { return strings.Repeat("[", levels) + strings.Repeat("]", levels) }
	const msg = "nests objects and arrays deeper than 64 levels"
	checkRefused(t, newTask, []refused{
		{`{"input":` + nest(MaxDepth) + `}`, "input", msg},
		{`{"input":{"a":` + nest(20000) + `}}`, "input", msg},
		{`{"notify":[{"url":` + nest(MaxDepth) + `}]}`, "notify[0].url", msg},
		{`{"input":` + nest(70) + `,}`, "", ""},
	})
	checkTaken(t, newTask, `{"input":`+nest(MaxDepth-1)+`}`)
	checkTaken(t, func() any { var v any; return &v }, strings.Repeat(`{"a":`, MaxDepth)+"1"+strings.Repeat("}", MaxDepth))
}

// A value of the wrong type names its field and the type it must be.
func TestDecodeTypeMismatch(t *testing.T) {
	t.Parallel()
	checkRefused(t, newTask, []refused{
		{`{"sessionId":7}`, "sessionId", "must be a string"},
		{`{"ttlMs":"5"}`, "ttlMs", "must be a number"},
		{`{"notify":{}}`, "notify", "must be an array"},
		{`{"notify":[7]}`, "notify", "must be an object"},
	})
	var in createTask
	if err := Decode([]byte(`{"sessionId":"ses_a","input":{"K":1},"ttlMs":5}`), &in); err != nil ||
		in.SessionID != "ses_a" || string(in.Input) != `{"K":1}` || *in.TTLMs != 5 {
		t.Fatalf("decoded %+v, %v", in, err)
	}
}

type (
	base struct {
		ID     string `json:"id"`
		Shared string `json:"shared"`
	}
	// Node is exported: encoding/json sets an embedded pointer only to an
	// exported type.
	Node struct {
		Name     string  `json:"name"`
		Children []*Node `json:"children"`
	}
	shaped struct {
		base
		*Node
		Shared   int            `json:"shared"` // shallower than base's: this one is decoded
		Skipped  string         `json:"-"`
		private  string         // not a member
		Untagged string         // named as in Go
		When     time.Time      `json:"when"` // reads its own JSON
		Raw      []byte         `json:"raw"`  // base64
		Tree     Node           `json:"tree"`
		ByName   map[string]int `json:"byName"`
	}
)

// Names are those encoding/json decodes into: tags, Go names, promoted
// fields of embedded structs (a shallower one wins), none for "-" or an
// unexported field; a type that reads its own JSON takes any; a recursive
// type is checked at every depth.
func TestDecodeShapes(t *testing.T) {
	t.Parallel()
	newShaped := func() any { return &shaped{} }
	checkRefused(t, newShaped, []refused{
		{`{"Skipped":"x"}`, "Skipped", "is not a known field"},
		{`{"-":"x"}`, "-", "is not a known field"},
		{`{"private":"x"}`, "private", "is not a known field"},
		{`{"untagged":"x"}`, "untagged", "names match exactly: Untagged"},
		{`{"shared":"x"}`, "shared", "must be a number"},
		{`{"tree":{"children":[{"children":[{"NAME":"x"}]}]}}`, "tree.children[0].children[0].NAME", "is not a known field"},
		{`{"byName":{"a":"x"}}`, "byName", "must be a number"},
		{`{"when":{"a":1}}`, "body", "could not be decoded"}, // its own refusal, not quoted
	})
	checkTaken(t, newShaped,
		`{"id":"i","shared":1,"Untagged":"u","name":"n","children":[{"name":"c"}],"when":"2025-01-02T03:04:05Z","raw":"AQID"}`,
		`{"tree":{"name":"t","children":[{"children":[]}]},"byName":{"ANY":1}}`)
}

// A field path quotes a long name cut at a character's start.
func TestDecodeCutsLongNames(t *testing.T) {
	t.Parallel()
	checkRefused(t, newTask, []refused{
		{`{"` + strings.Repeat("é", 40) + `":1}`, strings.Repeat("é", 32) + "...", "is not a known field"},
		{`{"` + strings.Repeat("a", 64) + `":1}`, strings.Repeat("a", 64), "is not a known field"},
		{`{"` + "a" + strings.Repeat("é", 40) + `":1}`, "a" + strings.Repeat("é", 31) + "...", "is not a known field"},
	})
	var invalid *problem.ValidationError
	if err := Decode([]byte(`{"`+strings.Repeat("é", 40)+`":1}`), newTask()); !errors.As(err, &invalid) || !utf8.ValidString(invalid.Field) {
		t.Fatalf("%v", err)
	}
}

// check reads JSON as encoding/json does (whatever one takes, the other
// takes), and what it takes has exact member names and sound text.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":[1,2,{"b":null}]}`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":-0.1e+5}`,
		`{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\xff\"}", `{"a":[[[[]]]]}`, `{"a":1} x`, `{"a" 1}`, `{"a":tru}`,
		`{"sessionId":"s","SESSIONID":"t"}`, `{"a":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	root := shapeOf(reflect.TypeFor[createTask]())
	f.Fuzz(func(t *testing.T, body []byte) {
		// Bodies this short cannot nest past encoding/json's own limit (10000).
		if len(body) == 0 || body[0] != '{' || len(body) > 10000 {
			return
		}
		err := check(body, root)
		var syntax *SyntaxError
		var invalid *problem.ValidationError
		syntaxOK := err == nil || !errors.As(err, &syntax)
		if valid := json.Valid(body); syntaxOK != valid {
			t.Fatalf("check says %v, json.Valid %v", err, valid)
		}
		// Either refusal is answered 400 (invalid_json, invalid_request).
		if err != nil && !errors.As(err, &syntax) && !errors.As(err, &invalid) {
			t.Fatalf("problem %v is neither a SyntaxError nor a ValidationError", err)
		}
		if err != nil {
			return
		}
		// Taken: every member name is a field's, exactly, and the text is sound.
		if !utf8.Valid(body) {
			t.Fatalf("took invalid UTF-8: %q", body)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("took what encoding/json refuses: %v", err)
		}
		for name := range members {
			if _, ok := root.fields[name]; !ok {
				t.Fatalf("took member %q, which is not a field", name)
			}
		}
	})
}
