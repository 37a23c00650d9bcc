package slack

import (
	"fmt"
	"strings"
)

// parseEntries reads a setting written as KEY=value entries separated by
// commas, spaces around either allowed: read checks one entry and makes its
// value. An empty setting has no entries. An entry read refuses, or a key
// given twice, is an error naming the entry by position only (a value may
// be a principal, which the error keeps out of logs).
func parseEntries[V any](s string, read func(key, value string) (V, error)) (map[string]V, error) {
	out := map[string]V{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, entry := range strings.Split(s, ",") {
		key, value, _ := strings.Cut(entry, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		v, err := read(key, value)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("entry %d: %s is given twice", i+1, key)
		}
		out[key] = v
	}
	return out, nil
}
