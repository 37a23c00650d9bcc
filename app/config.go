package app

import (
	"cmp"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/tasks"
)

// Config is every setting of the service. The zero value means the defaults;
// Validate checks it once at start. cmd/server fills it from flags and
// TASKHOOK_* variables.
type Config struct {
	Addr               string        // TASKHOOK_ADDR, default ":8080"
	PublicURL          string        // TASKHOOK_PUBLIC_URL, default "http://localhost:8080"
	RedisURL           string        // TASKHOOK_REDIS_URL; empty: the embedded store
	RedisCluster       bool          // TASKHOOK_REDIS_CLUSTER
	RedisPrefix        string        // TASKHOOK_REDIS_PREFIX, default "th:"
	Partitions         int           // TASKHOOK_PARTITIONS, default 16
	RedisTimeout       time.Duration // TASKHOOK_REDIS_TIMEOUT: the whole of one Redis command, default 2s
	JWTSecret          string        // TASKHOOK_JWT_SECRET (HS256, at least 32 bytes)
	JWKSFile           string        // TASKHOOK_JWKS_FILE
	JWTAudience        string        // TASKHOOK_JWT_AUDIENCE
	JWTIssuer          string        // TASKHOOK_JWT_ISSUER
	JWTMaxAge          time.Duration // TASKHOOK_JWT_MAX_AGE: the longest token lifetime taken (exp - iat, or exp - now without iat); default 24h
	AnswerKey          string        // TASKHOOK_ANSWER_KEY: base64 of at least 32 bytes; answer tokens are made with it (see answerKey)
	MaxBodyBytes       int64         // TASKHOOK_MAX_BODY_BYTES, default 1 MiB
	MaxTasksPerSession int           // TASKHOOK_MAX_TASKS_PER_SESSION: live tasks in one session, default 10000
	MaxTaskBytes       int           // TASKHOOK_MAX_TASK_BYTES: a task record as JSON, default 1 MiB
	ListRate           float64       // TASKHOOK_LIST_RATE: lists a second per principal and replica, default 20; negative: no limit
	ListBurst          int           // TASKHOOK_LIST_BURST: lists at once above that rate, default 10
	DefaultTTL         time.Duration // TASKHOOK_DEFAULT_TTL, default 7 days
	MaxTTL             time.Duration // TASKHOOK_MAX_TTL, default 30 days
	ShutdownTimeout    time.Duration // TASKHOOK_SHUTDOWN_TIMEOUT, default 20s
	RecheckInterval    time.Duration // TASKHOOK_RECHECK_INTERVAL: a waiter's safety-net re-read; default 15s
	WakeBlock          time.Duration // TASKHOOK_WAKE_BLOCK: one blocking read of a fan-in reader; default 5s
	LogLevel           string        // TASKHOOK_LOG_LEVEL: debug, info, warn, error; default info

	HookMaxDeliveries int     // TASKHOOK_HOOK_MAX_DELIVERIES: deliveries of a hook event to a group before it is dead-lettered; default 10
	HookRateLimit     float64 // TASKHOOK_HOOK_RATE_LIMIT: callbacks per second per hook; default 50
	HookBurst         int     // TASKHOOK_HOOK_BURST: callbacks a hook takes at once above its rate; default 100

	BodyTimeout          time.Duration // TASKHOOK_BODY_TIMEOUT: a request's whole body must arrive within it; default 15s
	MaxInflightBodyBytes int64         // TASKHOOK_MAX_INFLIGHT_BODY_BYTES: body bytes held in memory across authenticated requests; default 64 MiB
	// TASKHOOK_MAX_PREAUTH_BODY_BYTES: body bytes held, apart, by requests
	// not authenticated by a bearer token; default an eighth of the above.
	// TASKHOOK_MAX_PREAUTH_BODY_BYTES_PER_ADDRESS: what one client address
	// holds of them; default a quarter of that. Both at least MaxBodyBytes.
	MaxPreauthBodyBytes           int64
	MaxPreauthBodyBytesPerAddress int64

	NotifyTimeout       time.Duration // TASKHOOK_NOTIFY_TIMEOUT: one notification delivery attempt; default 10s
	NotifyConcurrency   int           // TASKHOOK_NOTIFY_CONCURRENCY: deliveries under way at once per replica; default 64
	NotifyRetryBase     time.Duration // TASKHOOK_NOTIFY_RETRY_BASE: the first retry's backoff; default 15s
	NotifyMaxAttempts   int           // TASKHOOK_NOTIFY_MAX_ATTEMPTS: attempts before a notification is dead-lettered; default 8
	NotifyClaimIdle     time.Duration // TASKHOOK_NOTIFY_CLAIM_IDLE: a delivery left this long by a dead replica is taken over; default the timeout + 10s
	AllowPrivateTargets bool          // TASKHOOK_ALLOW_PRIVATE_TARGETS: let endpoints resolve to loopback, private and metadata addresses

	DebugAddr string // TASKHOOK_DEBUG_ADDR: serve net/http/pprof here (loopback only); empty: off
	// DevSecretFile keeps the development secret (no JWT secret or JWKS
	// file, so the embedded store) across restarts: TASKHOOK_DEV_SECRET_FILE.
	DevSecretFile string

	SlackBotToken      string // TASKHOOK_SLACK_BOT_TOKEN: lets notify endpoints be Slack channels ({slack: {channel}})
	SlackAPIURL        string // TASKHOOK_SLACK_API_URL: the Slack Web API's base, default https://slack.com/api/
	SlackSigningSecret string // TASKHOOK_SLACK_SIGNING_SECRET: the Slack app's signing secret; set, the interactions route is mounted
	MCPAllowedOrigins  string // TASKHOOK_MCP_ALLOWED_ORIGINS: "https://a.example,https://b.example"
	SlackUsers         string // TASKHOOK_SLACK_USERS: "U012AB=alice,U034CD=bob", the principal each Slack user answers as
	SlackChannels      string // TASKHOOK_SLACK_CHANNELS: "C012=alice|bob,C034=carol", the principals whose endpoints may post to each channel

	ConnectionsFile string        // TASKHOOK_CONNECTIONS_FILE: the OAuth connections executors may ask tokens of (JSON array)
	VaultKeys       string        // TASKHOOK_VAULT_KEYS: "id:base64key,...", 32-byte keys; the first seals, all open
	SigninTTL       time.Duration // TASKHOOK_SIGNIN_TTL: how long a sign-in URL works; default 15m
	// Environ is the process's environment (NAME=value), as os.Environ gives
	// it: New warns of each TASKHOOK_* name in it that no setting reads,
	// naming the setting it may have meant. Values are never looked at.
	Environ []string
	// Now is the clock of sign-ins, provider tokens and the interval of the
	// log's repeated warnings; nil: time.Now. Tests move it to run attempts
	// and tokens out, and through an outage.
	Now func() time.Time
}

// hooks is the hook service's part of the settings, whose limits that
// service checks (hooks.Config.Validate).
func (c Config) hooks() hooks.Config {
	return hooks.Config{
		PublicURL: c.PublicURL, DefaultTTL: c.DefaultTTL, MaxTTL: c.MaxTTL,
		MaxDeliveries: c.HookMaxDeliveries, RateLimit: c.HookRateLimit, Burst: c.HookBurst,
	}
}

// Validate reports every setting that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.RedisURL != "" && c.JWTSecret == "" && c.JWKSFile == "" {
		errs = append(errs, errors.New("TASKHOOK_JWT_SECRET or TASKHOOK_JWKS_FILE is required with a Redis store"))
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 32 {
		errs = append(errs, errors.New("TASKHOOK_JWT_SECRET must be at least 32 bytes"))
	}
	if c.AnswerKey != "" {
		if k, err := authz.DecodeKey(c.AnswerKey); err != nil || len(k) < tasks.MinAnswerKeyBytes {
			errs = append(errs, fmt.Errorf("TASKHOOK_ANSWER_KEY must be base64 of at least %d bytes", tasks.MinAnswerKeyBytes))
		}
	} else if c.RedisURL != "" && c.JWTSecret == "" {
		errs = append(errs, errors.New("TASKHOOK_ANSWER_KEY is required with a Redis store and no TASKHOOK_JWT_SECRET: "+
			"every replica must make the same answer links"))
	}
	if c.RedisCluster && c.RedisURL == "" {
		errs = append(errs, errors.New("TASKHOOK_REDIS_CLUSTER needs TASKHOOK_REDIS_URL with the node addresses"))
	}
	if c.JWTMaxAge < 0 {
		errs = append(errs, errors.New("TASKHOOK_JWT_MAX_AGE must not be negative"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("TASKHOOK_MAX_BODY_BYTES must not be negative"))
	}
	if c.BodyTimeout < 0 {
		errs = append(errs, errors.New("TASKHOOK_BODY_TIMEOUT must not be negative"))
	}
	if d := c.withDefaults(); c.MaxInflightBodyBytes < 0 || (c.MaxInflightBodyBytes > 0 && c.MaxInflightBodyBytes < d.MaxBodyBytes) {
		errs = append(errs, errors.New("TASKHOOK_MAX_INFLIGHT_BODY_BYTES must be at least TASKHOOK_MAX_BODY_BYTES"))
	}
	if d := c.withDefaults(); c.MaxPreauthBodyBytes < 0 || (c.MaxPreauthBodyBytes > 0 && c.MaxPreauthBodyBytes < d.MaxBodyBytes) {
		errs = append(errs, errors.New("TASKHOOK_MAX_PREAUTH_BODY_BYTES must be at least TASKHOOK_MAX_BODY_BYTES"))
	} else if n := c.MaxPreauthBodyBytesPerAddress; n < 0 || (n > 0 && (n < d.MaxBodyBytes || n > d.MaxPreauthBodyBytes)) {
		errs = append(errs, errors.New("TASKHOOK_MAX_PREAUTH_BODY_BYTES_PER_ADDRESS must be at least TASKHOOK_MAX_BODY_BYTES "+
			"and at most TASKHOOK_MAX_PREAUTH_BODY_BYTES"))
	}
	if c.MaxTTL < 0 || c.DefaultTTL < 0 || (c.MaxTTL > 0 && c.DefaultTTL > c.MaxTTL) {
		errs = append(errs, errors.New("TASKHOOK_DEFAULT_TTL must be positive and not above TASKHOOK_MAX_TTL"))
	}
	if c.PublicURL != "" && !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		errs = append(errs, errors.New("TASKHOOK_PUBLIC_URL must start with http:// or https://"))
	}
	if c.ListRate > 10000 || c.ListBurst < 0 {
		errs = append(errs, errors.New("TASKHOOK_LIST_RATE must be at most 10000 a second (negative: no limit) and TASKHOOK_LIST_BURST at least 1"))
	}
	if c.MaxTasksPerSession < 0 {
		errs = append(errs, errors.New("TASKHOOK_MAX_TASKS_PER_SESSION must be at least 1"))
	}
	if c.MaxTaskBytes < 0 || (c.MaxTaskBytes > 0 && c.MaxTaskBytes < 4096) {
		errs = append(errs, errors.New("TASKHOOK_MAX_TASK_BYTES must be at least 4096"))
	}
	if c.RedisTimeout < 0 || (c.RedisTimeout > 0 && c.RedisTimeout < 10*time.Millisecond) {
		errs = append(errs, errors.New("TASKHOOK_REDIS_TIMEOUT must be at least 10ms"))
	}
	if err := c.hooks().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("TASKHOOK_HOOK_MAX_DELIVERIES, TASKHOOK_HOOK_RATE_LIMIT, TASKHOOK_HOOK_BURST: %w", err))
	}
	if c.NotifyTimeout < 0 || c.NotifyConcurrency < 0 || c.NotifyRetryBase < 0 || c.NotifyMaxAttempts < 0 || c.NotifyClaimIdle < 0 {
		errs = append(errs, errors.New("TASKHOOK_NOTIFY_* settings must not be negative"))
	}
	if c.SlackAPIURL != "" && !strings.HasPrefix(c.SlackAPIURL, "https://") && !strings.HasPrefix(c.SlackAPIURL, "http://") {
		errs = append(errs, errors.New("TASKHOOK_SLACK_API_URL must be an http(s) URL"))
	}
	if c.DebugAddr != "" {
		if err := checkDebugAddr(c.DebugAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if c.NotifyMaxAttempts > 100 {
		errs = append(errs, errors.New("TASKHOOK_NOTIFY_MAX_ATTEMPTS must be at most 100"))
	}
	if _, err := slack.ParseUsers(c.SlackUsers); err != nil {
		errs = append(errs, fmt.Errorf("TASKHOOK_SLACK_USERS: %w", err))
	}
	if c.SlackUsers != "" && c.SlackSigningSecret == "" && c.SlackBotToken == "" {
		errs = append(errs, errors.New("TASKHOOK_SLACK_USERS needs TASKHOOK_SLACK_SIGNING_SECRET or TASKHOOK_SLACK_BOT_TOKEN"))
	}
	if _, err := slack.ParseChannels(c.SlackChannels); err != nil {
		errs = append(errs, fmt.Errorf("TASKHOOK_SLACK_CHANNELS: %w", err))
	}
	if d := c.withDefaults(); c.SlackSigningSecret != "" && d.MaxBodyBytes < slack.MaxInteractionBytes {
		errs = append(errs, fmt.Errorf("TASKHOOK_MAX_BODY_BYTES must be at least %d with TASKHOOK_SLACK_SIGNING_SECRET: "+
			"a click sends back the whole message clicked", slack.MaxInteractionBytes))
	}
	if c.SlackChannels != "" && c.SlackBotToken == "" {
		errs = append(errs, errors.New("TASKHOOK_SLACK_CHANNELS needs TASKHOOK_SLACK_BOT_TOKEN"))
	}
	if c.SigninTTL < 0 {
		errs = append(errs, errors.New("TASKHOOK_SIGNIN_TTL must not be negative"))
	}
	if c.VaultKeys != "" {
		if _, err := authz.ParseVaultKeys(c.VaultKeys); err != nil {
			errs = append(errs, fmt.Errorf("TASKHOOK_VAULT_KEYS: %w", err))
		}
	} else if c.RedisURL != "" && c.ConnectionsFile != "" {
		errs = append(errs, errors.New("TASKHOOK_VAULT_KEYS is required with a Redis store and TASKHOOK_CONNECTIONS_FILE: "+
			"provider tokens are kept sealed, with keys every replica shares"))
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		errs = append(errs, errors.New("TASKHOOK_LOG_LEVEL must be debug, info, warn or error"))
	}
	return errors.Join(errs...)
}

// answerKey is the key answer tokens are made with, and where it came from:
// TASKHOOK_ANSWER_KEY; else a key derived from TASKHOOK_JWT_SECRET (HKDF-
// SHA256), which every replica shares already; else, on the embedded store
// only (Validate refuses a Redis store), none: the task service makes a
// random one, which lives as long as the embedded data does.
func (c Config) answerKey() ([]byte, string, error) {
	switch {
	case c.AnswerKey != "":
		k, err := authz.DecodeKey(c.AnswerKey)
		return k, "TASKHOOK_ANSWER_KEY", err
	case c.JWTSecret != "":
		k, err := hkdf.Key(sha256.New, []byte(c.JWTSecret), nil, "taskhook answer tokens", tasks.MinAnswerKeyBytes)
		return k, "TASKHOOK_JWT_SECRET", err
	}
	return nil, "random", nil
}

// Where the vault's sealing key comes from.
const (
	vaultKeys   = "TASKHOOK_VAULT_KEYS"
	vaultJWT    = "TASKHOOK_JWT_SECRET"
	vaultAnswer = "TASKHOOK_ANSWER_KEY"
	vaultRandom = "random"
)

// vault is the vault every stored secret is sealed with (provider tokens,
// hook verification secrets, notification endpoint secrets), and where its
// sealing key came from: TASKHOOK_VAULT_KEYS (the first seals); else a key
// derived (HKDF-SHA256) from TASKHOOK_JWT_SECRET, or from
// TASKHOOK_ANSWER_KEY without one, which every replica shares already; else,
// on the embedded store only, a key made at start. The derived key (id
// "jwt" or "answer") also opens beside TASKHOOK_VAULT_KEYS, so what it
// sealed keeps opening, and is sealed again with the first key when read.
// Validate refuses a Redis store with connections and no TASKHOOK_VAULT_KEYS:
// provider tokens get keys of their own.
func (c Config) vault() (*authz.Vault, string, error) {
	v := authz.NewVault()
	source := vaultRandom
	if c.VaultKeys != "" {
		parsed, err := authz.ParseVaultKeys(c.VaultKeys)
		if err != nil {
			return nil, "", fmt.Errorf("TASKHOOK_VAULT_KEYS: %w", err)
		}
		v, source = parsed, vaultKeys
	}
	id, secret, info := "", []byte(nil), "taskhook vault"
	switch {
	case c.JWTSecret != "":
		id, secret = "jwt", []byte(c.JWTSecret)
	case c.AnswerKey != "":
		k, err := authz.DecodeKey(c.AnswerKey)
		if err != nil {
			return nil, "", fmt.Errorf("TASKHOOK_ANSWER_KEY: %w", err)
		}
		id, secret = "answer", k
	}
	if id != "" && !v.Holds(id) {
		key, err := hkdf.Key(sha256.New, secret, nil, info, authz.VaultKeyBytes)
		if err != nil {
			return nil, "", err
		}
		if err := v.AddKey(id, key); err != nil {
			return nil, "", err
		}
		if source == vaultRandom {
			source = map[string]string{"jwt": vaultJWT, "answer": vaultAnswer}[id]
		}
	}
	if source == vaultRandom {
		v = authz.NewRandomVault()
	}
	return v, source, nil
}

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, ":8080")
	c.PublicURL = cmp.Or(c.PublicURL, "http://localhost:8080")
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, 1<<20)
	c.BodyTimeout = cmp.Or(c.BodyTimeout, 15*time.Second)
	c.MaxInflightBodyBytes = cmp.Or(c.MaxInflightBodyBytes, 64<<20)
	c.MaxPreauthBodyBytes = cmp.Or(c.MaxPreauthBodyBytes, max(c.MaxInflightBodyBytes/8, c.MaxBodyBytes))
	c.MaxPreauthBodyBytesPerAddress = cmp.Or(c.MaxPreauthBodyBytesPerAddress,
		min(max(c.MaxPreauthBodyBytes/4, c.MaxBodyBytes), c.MaxPreauthBodyBytes))
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 20*time.Second)
	c.JWTMaxAge = cmp.Or(c.JWTMaxAge, authz.DefaultMaxAge)
	return c
}
