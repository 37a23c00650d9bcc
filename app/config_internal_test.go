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
