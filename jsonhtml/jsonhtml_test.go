package jsonhtml

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The HTML escapes of encoding/json come out as the characters; any other
// escape, and the text \u0026 inside a string, stay as they are.
func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`{"authorizationUrl":"https://p/a?x=1\u0026y=2"}`: `{"authorizationUrl":"https://p/a?x=1&y=2"}`,
		`"\u003cb\u003e \u0026amp;"`:                      `"<b> &amp;"`,
		`"\u003Cb\u003E"`:                                 `"<b>"`,
		`"a backslash and u0026: \\u0026"`:                `"a backslash and u0026: \\u0026"`,
		`"\\\u0026"`:                                      `"\\&"`,
		`"\u2028 \u00e9 \n \""`:                           `"\u2028 \u00e9 \n \""`,
		`"no escapes"`:                                    `"no escapes"`,
		`"cut \u00`:                                       `"cut \u00`,
	} {
		if got := string(Unescape([]byte(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	in := []byte(`"\u0026"`)
	Unescape(in)
	if string(in) != `"\u0026"` {
		t.Errorf("the input was changed: %s", in)
	}
}

// Whatever a string holds, its JSON with the HTML escapes made literal
// reads back as the same string, and holds none of those escapes.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"a&b", `\u0026`, `<script>\`, "\u2028&\\u003c", "é<>&\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := json.Marshal(map[string]string{"v": s})
		if err != nil {
			t.Skip()
		}
		out := Unescape(raw)
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		var want map[string]string
		_ = json.Unmarshal(raw, &want) // invalid UTF-8 comes back as U+FFFD both ways
		if back["v"] != want["v"] {
			t.Fatalf("%q came back as %q", want["v"], back["v"])
		}
		for _, esc := range []string{`\u0026`, `\u003c`, `\u003e`} {
			if bytes.Contains(bytes.ReplaceAll(out, []byte(`\\`), nil), []byte(esc)) {
				t.Fatalf("%s still holds %s", out, esc)
			}
		}
	})
}
