package app_test

import (
	"io"
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

// TASKHOOK_SLACK_* are read from the environment, and a users list that
// cannot be read refuses to start.
func TestSlackSettings(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"TASKHOOK_SLACK_SIGNING_SECRET": "s3cret", "TASKHOOK_SLACK_USERS": "U012AB=alice,U034CD=bob"}
	cfg, err := app.FromEnv(nil, func(name string) string { return vars[name] })
	if err != nil || cfg.SlackSigningSecret != "s3cret" || cfg.SlackUsers != "U012AB=alice,U034CD=bob" {
		t.Fatalf("from the environment: %+v, %v", cfg, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, bad := range []app.Config{
		{SlackSigningSecret: "s3cret", SlackUsers: "U012AB:alice"},
		{SlackSigningSecret: "s3cret", SlackUsers: "U012AB=alice,U012AB=bob"},
		{SlackUsers: "U012AB=alice"}, // a map with no app to take clicks from
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_SLACK_USERS") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := app.New(t.Context(), app.Config{SlackSigningSecret: "s3cret", SlackUsers: "alice"}, io.Discard); err == nil {
		t.Error("a server started with a malformed TASKHOOK_SLACK_USERS")
	}
}
