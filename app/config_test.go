package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
)

// TASKHOOK_JWT_MAX_AGE is read from the environment, a flag wins over it, and
// a value that cannot work is refused.
func TestJWTMaxAgeSetting(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "TASKHOOK_JWT_MAX_AGE" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		args []string
		env  string
		want time.Duration
	}{
		{nil, "", 0}, // the default, 24h, is filled in at start
		{nil, "15m", 15 * time.Minute},
		{[]string{"-jwt-max-age=2h"}, "15m", 2 * time.Hour},
		{[]string{"-jwt-max-age", "90s"}, "", 90 * time.Second},
	} {
		cfg, err := app.FromEnv(c.args, env(c.env))
		if err != nil || cfg.JWTMaxAge != c.want {
			t.Errorf("%v with %q: %v, %v; want %v", c.args, c.env, cfg.JWTMaxAge, err, c.want)
		}
	}
	if _, err := app.FromEnv(nil, env("a day")); err == nil || !strings.Contains(err.Error(), "TASKHOOK_JWT_MAX_AGE") {
		t.Errorf("an unreadable value: %v", err)
	}
	if err := (app.Config{JWTMaxAge: -time.Minute}).Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_JWT_MAX_AGE") {
		t.Errorf("a negative value: %v", err)
	}
}
