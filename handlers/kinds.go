package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/waits"
)

// parseKinds reads ?kinds=: event types, comma-separated, each one of the
// contract's. Absent or empty means every type.
func parseKinds(r *http.Request) (waits.Kinds, error) {
	v := r.URL.Query().Get("kinds")
	if v == "" {
		return nil, nil
	}
	var kinds waits.Kinds
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if !events.Known(k) {
			return nil, invalidRequest("kinds", "must be event types separated by commas, each one of "+
				strings.Join(wire.EventTypes, ", ")+"; "+strconv.Quote(shorten(k))+" is not")
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// shorten cuts s to a length an error message may echo, on a rune
// boundary.
func shorten(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
