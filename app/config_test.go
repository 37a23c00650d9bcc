package app_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
	// A click sends back the whole message: a body limit below the largest
	// click would lose answers.
	if err := (app.Config{SlackSigningSecret: "s3cret", MaxBodyBytes: 64 << 10}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "TASKHOOK_MAX_BODY_BYTES") {
		t.Errorf("a body limit below a click: %v", err)
	}
}

// TASKHOOK_SLACK_CHANNELS is read from the environment or a flag, and a
// list that cannot be read, or one with no bot to post, refuses to start.
func TestSlackChannelsSetting(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"TASKHOOK_SLACK_BOT_TOKEN": "xoxb-1", "TASKHOOK_SLACK_CHANNELS": "C012=alice|bob,C034=carol"}
	cfg, err := app.FromEnv(nil, func(name string) string { return vars[name] })
	if err != nil || cfg.SlackChannels != "C012=alice|bob,C034=carol" {
		t.Fatalf("from the environment: %v, %v", cfg.SlackChannels, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	if cfg, err := app.FromEnv([]string{"-slack-channels=#ops=dave"}, func(name string) string { return vars[name] }); err != nil || cfg.SlackChannels != "#ops=dave" {
		t.Fatalf("from the flag: %v, %v", cfg.SlackChannels, err)
	}
	// The users map serves direct messages too: a bot token alone is enough.
	if err := (app.Config{SlackBotToken: "xoxb-1", SlackUsers: "U012AB=alice"}).Validate(); err != nil {
		t.Fatalf("users with a bot token only: %v", err)
	}
	for _, bad := range []app.Config{
		{SlackBotToken: "xoxb-1", SlackChannels: "C012:alice"},
		{SlackBotToken: "xoxb-1", SlackChannels: "C012=alice,C012=bob"},
		{SlackBotToken: "xoxb-1", SlackChannels: "C012="},
		{SlackChannels: "C012=alice"}, // no bot to post
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_SLACK_CHANNELS") {
			t.Errorf("%+v: %v", bad.SlackChannels, err)
		}
	}
	if _, err := app.New(t.Context(), app.Config{SlackBotToken: "xoxb-1", SlackChannels: "general=alice"}, io.Discard); err == nil {
		t.Error("a server started with a malformed TASKHOOK_SLACK_CHANNELS")
	}
}

// A Redis store with connections and no vault keys refuses to start; bad
// keys and a bad connections file stop the server with a message naming
// what is wrong.
func TestConnectionSettings(t *testing.T) {
	t.Parallel()
	redisCfg := app.Config{RedisURL: "redis://127.0.0.1:6379/0", JWTSecret: strings.Repeat("s", 32), ConnectionsFile: "c.json"}
	if err := redisCfg.Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_VAULT_KEYS") {
		t.Errorf("Redis without vault keys: %v", err)
	}
	if err := (app.Config{VaultKeys: "k:short"}).Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_VAULT_KEYS") {
		t.Errorf("a bad vault key: %v", err)
	}
	env := map[string]string{"TASKHOOK_SIGNIN_TTL": "5m", "TASKHOOK_CONNECTIONS_FILE": "/etc/c.json", "TASKHOOK_VAULT_KEYS": "k:x"}
	cfg, err := app.FromEnv(nil, func(k string) string { return env[k] })
	if err != nil || cfg.SigninTTL != 5*time.Minute || cfg.ConnectionsFile != "/etc/c.json" || cfg.VaultKeys != "k:x" {
		t.Errorf("FromEnv: %+v %v", cfg, err)
	}

	file := filepath.Join(t.TempDir(), "connections.json")
	_ = os.WriteFile(file, []byte(`[{"name":"gh","authorizeUrl":"https://x/a","clientId":"c","clientSecret":"s"}]`), 0o600)
	_, err = app.New(context.Background(), app.Config{ConnectionsFile: file, Addr: "127.0.0.1:0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `entry 0 ("gh"): tokenUrl`) {
		t.Errorf("a bad connections file: %v", err)
	}
}

// The hook limits are checked by the hook service's own rule, and a refusal
// names the variables and the limit broken.
func TestHookLimitsAreValidated(t *testing.T) {
	for _, c := range []struct {
		cfg  app.Config
		want string
	}{
		{app.Config{HookMaxDeliveries: -1}, "max deliveries must be at least 1"},
		{app.Config{HookRateLimit: 1001}, "rate limit must be 0 to 1000 per second"},
		{app.Config{HookRateLimit: -1}, "rate limit must be 0 to 1000 per second"},
		{app.Config{HookBurst: -1}, "burst must be at least 1"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "TASKHOOK_HOOK_") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal naming TASKHOOK_HOOK_* and %q", c.cfg, err, c.want)
		}
	}
	if err := (app.Config{HookMaxDeliveries: 3, HookRateLimit: 1000, HookBurst: 1}).Validate(); err != nil {
		t.Errorf("limits in range: %v", err)
	}
}

// TASKHOOK_MAX_PREAUTH_BODY_BYTES and its per-address share are read from
// the environment, and sizes that cannot work are refused.
func TestPreauthBodySettings(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"TASKHOOK_MAX_PREAUTH_BODY_BYTES": "16777216", "TASKHOOK_MAX_PREAUTH_BODY_BYTES_PER_ADDRESS": "4194304"}
	cfg, err := app.FromEnv(nil, func(name string) string { return vars[name] })
	if err != nil || cfg.MaxPreauthBodyBytes != 16<<20 || cfg.MaxPreauthBodyBytesPerAddress != 4<<20 {
		t.Fatalf("from the environment: %d, %d, %v", cfg.MaxPreauthBodyBytes, cfg.MaxPreauthBodyBytesPerAddress, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	for _, bad := range []app.Config{
		{MaxPreauthBodyBytes: -1},
		{MaxPreauthBodyBytes: 1 << 10}, // below the 1 MiB a body may be
		{MaxPreauthBodyBytesPerAddress: -1},
		{MaxPreauthBodyBytesPerAddress: 1 << 10},
		{MaxPreauthBodyBytesPerAddress: 9 << 20},                               // above the default budget, 8 MiB
		{MaxPreauthBodyBytes: 2 << 20, MaxPreauthBodyBytesPerAddress: 3 << 20}, // above the budget set
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "TASKHOOK_MAX_PREAUTH_BODY_BYTES") {
			t.Errorf("%d, %d: %v", bad.MaxPreauthBodyBytes, bad.MaxPreauthBodyBytesPerAddress, err)
		}
	}
}
