package app

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// The answer key: TASKHOOK_ANSWER_KEY (base64, at least 32 bytes) when set;
// else derived from TASKHOOK_JWT_SECRET, so replicas that share the secret
// make the same links; else a random key on the embedded store, and a refusal
// to start on a Redis store.
func TestAnswerKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xfb}, 32)
	secret := strings.Repeat("s", 32)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		c := Config{RedisURL: "redis://r", JWTSecret: secret, AnswerKey: enc.EncodeToString(key)}
		got, source, err := c.answerKey()
		if err != nil || c.Validate() != nil || !bytes.Equal(got, key) || source != "TASKHOOK_ANSWER_KEY" {
			t.Errorf("%q: key %x from %s, %v, %v", c.AnswerKey, got, source, err, c.Validate())
		}
	}

	c := Config{RedisURL: "redis://r", JWTSecret: secret}
	derived, source, err := c.answerKey()
	if err != nil || c.Validate() != nil || len(derived) != 32 || source != "TASKHOOK_JWT_SECRET" {
		t.Fatalf("derived key %x from %s, %v, %v", derived, source, err, c.Validate())
	}
	again, _, _ := Config{JWTSecret: secret}.answerKey()
	other, _, _ := Config{JWTSecret: secret + "x"}.answerKey()
	if !bytes.Equal(derived, again) || bytes.Equal(derived, other) || bytes.Contains(derived, []byte(secret[:8])) {
		t.Errorf("derived keys: %x, %x, %x", derived, again, other)
	}

	if k, source, err := (Config{}).answerKey(); k != nil || source != "random" || err != nil {
		t.Errorf("embedded, nothing set: %x from %s, %v", k, source, err)
	}
	for name, c := range map[string]Config{
		"Redis with a JWKS file only": {RedisURL: "redis://r", JWKSFile: "keys.json"},
		"a short key":                 {AnswerKey: base64.StdEncoding.EncodeToString(key[:31])},
		"a key that is not base64":    {AnswerKey: "not base64!"},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_ANSWER_KEY") {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}

	c, err = FromEnv(nil, func(env string) string {
		if env == "TASKHOOK_ANSWER_KEY" {
			return "k"
		}
		return ""
	})
	if err != nil || c.AnswerKey != "k" {
		t.Errorf("FromEnv: %q %v", c.AnswerKey, err)
	}
}

// The vault's sealing key: TASKHOOK_VAULT_KEYS first, else derived from the
// JWT secret or the answer key, else made at start. A derived key keeps
// opening beside TASKHOOK_VAULT_KEYS, so what it sealed survives setting
// them.
func TestVaultSource(t *testing.T) {
	jwt := strings.Repeat("j", 32)
	keys := "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	answer := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	for _, c := range []struct {
		cfg    Config
		source string
	}{
		{Config{}, vaultRandom},
		{Config{JWTSecret: jwt}, vaultJWT},
		{Config{AnswerKey: answer}, vaultAnswer},
		{Config{JWTSecret: jwt, VaultKeys: keys}, vaultKeys},
	} {
		v, source, err := c.cfg.vault()
		if err != nil || source != c.source {
			t.Fatalf("%+v: %s %v, want %s", c.cfg, source, err, c.source)
		}
		sealed := v.Seal([]byte("x"), "hook", "h1")
		again, _, _ := c.cfg.vault()
		if plain, err := again.Open(sealed, "hook", "h1"); (err == nil) != (c.source != vaultRandom) || (err == nil && string(plain) != "x") {
			t.Errorf("%s: a second start opens %q, %v", c.source, plain, err)
		}
	}
	derived, _, _ := Config{JWTSecret: jwt}.vault()
	old := derived.Seal([]byte("x"), "endpoint", "ep_1")
	both, _, _ := Config{JWTSecret: jwt, VaultKeys: keys}.vault()
	if plain, err := both.Open(old, "endpoint", "ep_1"); err != nil || string(plain) != "x" || both.Current(old) {
		t.Fatalf("a value sealed with the derived key, once TASKHOOK_VAULT_KEYS is set: %q %v", plain, err)
	}
	if !both.Current(both.Seal([]byte("x"), "endpoint", "ep_1")) {
		t.Fatal("a new seal is not with the first of TASKHOOK_VAULT_KEYS")
	}
}

// The pre-auth body budget defaults to an eighth of the main one and one
// address's share to a quarter of that, neither below one body's limit.
func TestPreauthBodyDefaults(t *testing.T) {
	for _, c := range []struct {
		in                 Config
		budget, perAddress int64
	}{
		{Config{}, 8 << 20, 2 << 20},
		{Config{MaxInflightBodyBytes: 256 << 20}, 32 << 20, 8 << 20},
		{Config{MaxInflightBodyBytes: 4 << 20}, 1 << 20, 1 << 20}, // one 1 MiB body
		{Config{MaxPreauthBodyBytes: 20 << 20}, 20 << 20, 5 << 20},
		{Config{MaxPreauthBodyBytesPerAddress: 8 << 20}, 8 << 20, 8 << 20}, // behind a proxy: one address is everybody
	} {
		d := c.in.withDefaults()
		if d.MaxPreauthBodyBytes != c.budget || d.MaxPreauthBodyBytesPerAddress != c.perAddress || c.in.Validate() != nil {
			t.Errorf("%+v: %d and %d per address (%v), want %d and %d", c.in, d.MaxPreauthBodyBytes,
				d.MaxPreauthBodyBytesPerAddress, c.in.Validate(), c.budget, c.perAddress)
		}
	}
}
