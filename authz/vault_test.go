package authz

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func vaultKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, VaultKeyBytes)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// parseVault is the vault of spec, which must parse.
func parseVault(t *testing.T, spec string) *Vault {
	t.Helper()
	v, err := ParseVaultKeys(spec)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVaultRoundTrip(t *testing.T) {
	t.Parallel()
	v := parseVault(t, "k1:"+vaultKey(t))
	sealed := v.Seal([]byte("gho_secret"), "alice", "github")
	if strings.Contains(sealed, "gho_secret") || !strings.HasPrefix(sealed, "k1.") {
		t.Fatalf("sealed = %q", sealed)
	}
	got, err := v.Open(sealed, "alice", "github")
	if err != nil || string(got) != "gho_secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if again := v.Seal([]byte("gho_secret"), "alice", "github"); again == sealed {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
}

func TestVaultRotatedKeyOpensOldEntries(t *testing.T) {
	t.Parallel()
	oldKey, newKey := vaultKey(t), vaultKey(t)
	before := parseVault(t, "old:"+oldKey)
	sealed := before.Seal([]byte("refresh"), "alice", "google")

	after := parseVault(t, "new:"+newKey+", old:"+oldKey)
	if got, err := after.Open(sealed, "alice", "google"); err != nil || string(got) != "refresh" {
		t.Fatalf("the rotated vault does not open an old entry: %q, %v", got, err)
	}
	if resealed := after.Seal([]byte("refresh"), "alice", "google"); !strings.HasPrefix(resealed, "new.") {
		t.Fatalf("the first key does not seal: %q", resealed)
	}
	dropped := parseVault(t, "new:"+newKey)
	if _, err := dropped.Open(sealed, "alice", "google"); !errors.Is(err, ErrSealed) {
		t.Fatalf("a dropped key still opens: %v", err)
	}
}

func TestVaultRefusesMovedOrChangedValues(t *testing.T) {
	t.Parallel()
	v := parseVault(t, "k:"+vaultKey(t))
	alice := v.Seal([]byte("alice-token"), "alice", "github")
	bob := v.Seal([]byte("bob-token"), "bob", "github")
	cases := map[string]struct {
		sealed string
		parts  []string
	}{
		"another requester":  {alice, []string{"bob", "github"}},
		"another connection": {alice, []string{"alice", "google"}},
		"parts shifted":      {alice, []string{"alicegithub"}},
		"swapped ciphertext": {"k." + strings.SplitN(bob, ".", 2)[1], []string{"alice", "github"}},
		"unknown key id":     {"x." + strings.SplitN(alice, ".", 2)[1], []string{"alice", "github"}},
		"a flipped byte":     {flip(alice), []string{"alice", "github"}},
		"truncated":          {alice[:10], []string{"alice", "github"}},
		"not a sealed value": {"gho_plain", []string{"alice", "github"}},
	}
	for name, c := range cases {
		if got, err := v.Open(c.sealed, c.parts...); !errors.Is(err, ErrSealed) {
			t.Errorf("%s: opened %q, %v", name, got, err)
		}
	}
}

func flip(sealed string) string {
	id, b64, _ := strings.Cut(sealed, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(b64)
	raw[len(raw)/2] ^= 1
	return id + "." + base64.RawURLEncoding.EncodeToString(raw)
}

func TestVaultRefusesBadConfig(t *testing.T) {
	t.Parallel()
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 16))
	good := vaultKey(t)
	for name, spec := range map[string]string{
		"empty":         "",
		"no id":         good,
		"bad id":        "a b:" + good,
		"short key":     "k:" + short,
		"not base64":    "k:!!!",
		"duplicate id":  "k:" + good + ",k:" + good,
		"trailing item": "k:" + good + ",",
	} {
		if _, err := ParseVaultKeys(spec); err == nil {
			t.Errorf("%s: %q accepted", name, spec)
		} else if strings.Contains(err.Error(), good) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}

func TestRandomVaultSealsAndOpens(t *testing.T) {
	t.Parallel()
	v := NewRandomVault()
	got, err := v.Open(v.Seal([]byte("x"), "a"), "a")
	if err != nil || string(got) != "x" {
		t.Fatalf("%q %v", got, err)
	}
}

// OpenKept is the one rule of sealing a stored secret again: one kept in
// clear, or sealed with a key that no longer seals, is due; one sealed with
// the sealing key is not; one that does not open is an error.
func TestVaultOpenKept(t *testing.T) {
	t.Parallel()
	k1, k2 := vaultKey(t), vaultKey(t)
	old := parseVault(t, "k1:"+k1)
	v := parseVault(t, "k2:"+k2+",k1:"+k1)
	cases := []struct {
		name          string
		sealed, clear string
		want          string
		reseal        bool
	}{
		{"sealed with the sealing key", v.Seal([]byte("s1"), "hook", "h1"), "", "s1", false},
		{"sealed with an older key", old.Seal([]byte("s2"), "hook", "h1"), "", "s2", true},
		{"kept in clear", "", "s3", "s3", true},
		{"no secret at all", "", "", "", false},
	}
	for _, c := range cases {
		plain, reseal, err := v.OpenKept(c.sealed, c.clear, "hook", "h1")
		if err != nil || string(plain) != c.want || reseal != c.reseal {
			t.Errorf("%s: %q, reseal %v, %v; want %q, reseal %v", c.name, plain, reseal, err, c.want, c.reseal)
		}
	}
	if _, _, err := v.OpenKept(v.Seal([]byte("s4"), "hook", "h1"), "", "hook", "h2"); !errors.Is(err, ErrSealed) {
		t.Errorf("a value moved to another hook: %v, want ErrSealed", err)
	}
}
