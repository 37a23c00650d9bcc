package hooks

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestTokenShape(t *testing.T) {
	seen := map[string]bool{}
	for p := 0; p < 1024; p++ {
		tok := NewToken(p)
		if len(tok) != 49 || !strings.HasPrefix(tok, "whk_") {
			t.Fatalf("token %q", tok)
		}
		raw, err := base64.RawURLEncoding.DecodeString(tok[6:])
		if err != nil || len(raw) != 32 {
			t.Fatalf("random part of %q: %d bytes, %v", tok, len(raw), err)
		}
		got, ok := parseToken(tok, 1024)
		if !ok || got != p {
			t.Fatalf("parseToken(%q) = %d %v, want partition %d", tok, got, ok, p)
		}
		if seen[tok] {
			t.Fatalf("token repeated: %q", tok)
		}
		seen[tok] = true
	}
	if h := HashToken("whk_x"); len(h) != 64 || h == HashToken("whk_y") {
		t.Fatalf("hash %q", h)
	}
}

func TestParseTokenRefuses(t *testing.T) {
	good := NewToken(5)
	for name, tok := range map[string]string{
		"empty":            "",
		"short":            good[:48],
		"long":             good + "A",
		"prefix":           "whx_" + good[4:],
		"partition range":  good[:4] + "0g" + good[6:], // partition 15 of 8
		"partition letter": good[:4] + "0u" + good[6:], // not in the alphabet
		"padding":          good[:48] + "=",
		"slash":            good[:48] + "/",
		"plus":             good[:48] + "+",
		"space":            good[:48] + " ",
	} {
		if _, ok := parseToken(tok, 8); ok {
			t.Errorf("%s: %q accepted", name, tok)
		}
	}
	if p, ok := parseToken(good, 8); !ok || p != 5 {
		t.Fatalf("good token: %d %v", p, ok)
	}
}
