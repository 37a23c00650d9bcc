package store

import (
	"io/fs"
	"maps"
	"slices"
	"testing"
)

// Each script is sent with the prelude's definitions it uses: every name
// of the prelude its text (or a definition sent with it) uses is defined
// in what is sent, and no definition of the prelude is sent with none.
func TestScriptsGetThePreludeTheyUse(t *testing.T) {
	prelude, err := luaFiles.ReadFile("lua/prelude.lua")
	if err != nil {
		t.Fatal(err)
	}
	defs := preludeDefs(string(prelude))
	defined := map[string]bool{}
	for _, d := range defs {
		if len(d.defines) == 0 {
			t.Errorf("a definition that defines no name: %.60q", d.text)
		}
		for _, n := range d.defines {
			defined[n] = true
		}
	}
	for _, n := range []string{"owned", "terminal", "COMMANDS_KEPT", "index_add", "hook_closed_reason"} {
		if !defined[n] {
			t.Errorf("the prelude's definitions miss %s", n)
		}
	}
	paths, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range paths {
		if p == "lua/prelude.lua" {
			continue
		}
		body, err := luaFiles.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sent := preludeFor(defs, string(body))
		have := map[string]bool{}
		for _, d := range preludeDefs(sent) {
			for _, n := range d.defines {
				have[n] = true
				used[n] = true
			}
		}
		for n := range identifiers(sent + "\n" + string(body)) {
			if defined[n] && !have[n] {
				t.Errorf("%s uses %s, which is not sent with it", p, n)
			}
		}
		if p == "lua/field_reseal.lua" && len(sent) >= len(prelude)/4 {
			t.Errorf("%s, which uses a helper or two, is sent %d of the prelude's %d bytes", p, len(sent), len(prelude))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(defined)) {
		if !used[n] {
			t.Errorf("no script uses the prelude's %s", n)
		}
	}
}

func TestUncommented(t *testing.T) {
	for line, want := range map[string]string{
		"local a = b -- c d":             "local a = b ",
		"-- all of it":                   "",
		"local s = '--' .. x -- comment": "local s = '--' .. x ",
		`local s = "a\"--" .. y`:         `local s = "a\"--" .. y`,
		"local s = 'it''s' -- x":         "local s = 'it''s' ",
		"return a - -b":                  "return a - -b",
	} {
		if got := uncommented(line); got != want {
			t.Errorf("uncommented(%q) = %q, want %q", line, got, want)
		}
	}
}
