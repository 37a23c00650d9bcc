// Package jsonpath reads a value out of decoded JSON (what encoding/json
// decodes into an any) by a dotted path: object members by name, array
// elements by index. Tests use it to check an answer without a struct for
// every shape it may take.
package jsonpath

import (
	"strconv"
	"strings"
)

// At is the value at path in v ("error.code", "content.0.text"), or nil
// when a step names no member or element.
func At(v any, path string) any {
	for _, step := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[step]
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// String is the string at path in v, "" when there is none.
func String(v any, path string) string {
	s, _ := At(v, path).(string)
	return s
}
