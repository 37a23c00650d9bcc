package jsonpath_test

import (
	"encoding/json"
	"testing"

	"github.com/taskhook/taskhook/jsonpath"
)

func TestAt(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"a":{"b":[10,{"c":"x"}]},"n":null}`), &v); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"a.b.0": 10.0, "a.b.1.c": "x", "a.b.2": nil, "a.b.-1": nil, "a.b.x": nil,
		"a.missing": nil, "a.b.0.deeper": nil, "n": nil, "n.x": nil,
	} {
		if got := jsonpath.At(v, path); got != want {
			t.Errorf("At(%q) = %v, want %v", path, got, want)
		}
	}
	if got := jsonpath.String(v, "a.b.1.c"); got != "x" {
		t.Errorf("String of a string: %q", got)
	}
	if got := jsonpath.String(v, "a.b.0"); got != "" {
		t.Errorf("String of a number: %q", got)
	}
}
