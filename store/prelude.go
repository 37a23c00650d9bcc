package store

import (
	"regexp"
	"strings"
)

// A script is sent with the part of the prelude it uses, not all of it:
// Redis runs a script's top level on every call, and defining every helper
// of the prelude (some fifty closures) cost each call about 1.6 µs of
// Redis's time (redis-benchmark of the whole prelude before `return 1`,
// 2.16 µs a call against 0.54 µs), whatever the script then did. A
// script that uses a third of the helpers pays for a third.

// preludeDef is one top-level definition of the prelude: a line that
// starts with "local" at the left margin, the lines up to the next such
// line (the comment that follows it, and so the comment of the next
// definition, goes with it), the names it defines and the names its text
// mentions.
type preludeDef struct {
	text    string
	defines []string
	names   map[string]bool
}

var (
	luaIdent      = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	luaLocalNames = regexp.MustCompile(`^local\s+(?:function\s+([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_, ]*?)\s*=)`)
)

// preludeDefs splits the prelude into its definitions, in order. What
// comes before the first is its header comment, which defines nothing.
func preludeDefs(prelude string) []preludeDef {
	var defs []preludeDef
	var cur *strings.Builder
	flush := func() {
		if cur == nil {
			return
		}
		text := cur.String()
		def := preludeDef{text: text, names: identifiers(text)}
		m := luaLocalNames.FindStringSubmatch(text)
		switch {
		case m == nil:
		case m[1] != "":
			def.defines = []string{m[1]}
		default:
			for _, n := range strings.Split(m[2], ",") {
				def.defines = append(def.defines, strings.TrimSpace(n))
			}
		}
		defs = append(defs, def)
	}
	for _, line := range strings.SplitAfter(prelude, "\n") {
		if strings.HasPrefix(line, "local ") {
			flush()
			cur = &strings.Builder{}
		}
		if cur != nil {
			cur.WriteString(line)
		}
	}
	flush()
	return defs
}

// identifiers is every Lua name in text outside its comments, strings
// included: a definition kept for a name a string holds costs a little;
// one left out for a name used would break the script.
func identifiers(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		for _, n := range luaIdent.FindAllString(uncommented(line), -1) {
			names[n] = true
		}
	}
	return names
}

// uncommented is line without its comment: what follows a "--" that no
// string holds.
func uncommented(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && strings.HasPrefix(line[i:], "--"):
			return line[:i]
		}
	}
	return line
}

// preludeFor is the prelude's definitions that body uses, and those they
// use in turn, in the prelude's order.
func preludeFor(defs []preludeDef, body string) string {
	definedBy := map[string]int{}
	for i, d := range defs {
		for _, n := range d.defines {
			definedBy[n] = i
		}
	}
	keep := make([]bool, len(defs))
	var visit func(names map[string]bool)
	visit = func(names map[string]bool) {
		for n := range names {
			i, ok := definedBy[n]
			if !ok || keep[i] {
				continue
			}
			keep[i] = true
			visit(defs[i].names)
		}
	}
	visit(identifiers(body))
	var b strings.Builder
	for i, d := range defs {
		if keep[i] {
			b.WriteString(d.text)
		}
	}
	return b.String()
}
