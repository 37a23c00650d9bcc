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
