package tokens

import (
	"strings"
	"testing"
)

func TestTokensNameTheirPartition(t *testing.T) {
	t.Parallel()
	for p := range 1024 {
		tok := New("whk_", p)
		if got, ok := Parse(tok, "whk_", 1024); !ok || got != p {
			t.Fatalf("Parse(%q) = %d %v, want %d", tok, got, ok, p)
		}
	}
	tok := New("whk_", 3)
	for name, bad := range map[string]string{
		"another prefix":    "ans_" + tok[4:],
		"too short":         tok[:len(tok)-1],
		"not base64url":     tok[:len(tok)-1] + "+",
		"no such partition": tok[:4] + "zz" + tok[6:],
	} {
		if _, ok := Parse(bad, "whk_", 16); ok {
			t.Errorf("%s: %q parsed", name, bad)
		}
	}
	if h := Hash(tok); len(h) != 64 || strings.ToLower(h) != h || !SameHash(h, Hash(tok)) || SameHash(h, Hash(tok+"x")) {
		t.Fatalf("Hash: %q", h)
	}
}

// Parse reads what any caller of a capability URL sends.
func FuzzParse(f *testing.F) {
	f.Add(New("whk_", 5))
	f.Add("whk_")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if p, ok := Parse(tok, "whk_", 16); ok && (p < 0 || p >= 16 || len(tok) != length("whk_")) {
			t.Fatalf("Parse(%q) = %d", tok, p)
		}
	})
}
