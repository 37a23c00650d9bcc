// Package jsonhtml writes encoding/json's escapes of <, > and & back as the
// characters, for JSON answers that are never HTML. The REST face passes
// every JSON answer and streamed event through Unescape.
//
// It imports only the standard library.
package jsonhtml

import "bytes"

// htmlEscape is how encoding/json starts its escapes of <, > and &.
var htmlEscape = []byte(`\u00`)

// Unescape gives back JSON with encoding/json's \u003c, \u003e and
// \u0026 written as the characters they stand for, so a URL in an answer
// (an authorizationUrl, say) reads with a plain &. The escapes are there
// for JSON put inside HTML; API answers are application/json with nosniff,
// never HTML, and the pages that embed JSON escape it with html/template.
// Every escape is read from its backslash, so a string holding the text
// \u0026 (sent as \\u0026) stays as it is. b is not changed.
func Unescape(b []byte) []byte {
	if !bytes.Contains(b, htmlEscape) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) && bytes.HasPrefix(b[i+2:], []byte("00")) {
			if c, ok := htmlChar(b[i+4], b[i+5]); ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // an escape other than those: as it is
		i++
	}
	return out
}

// htmlChar is the character of the escape \u00XY when it is <, > or &.
func htmlChar(x, y byte) (byte, bool) {
	switch {
	case x == '2' && y == '6':
		return '&', true
	case x == '3' && (y == 'c' || y == 'C'):
		return '<', true
	case x == '3' && (y == 'e' || y == 'E'):
		return '>', true
	}
	return 0, false
}
