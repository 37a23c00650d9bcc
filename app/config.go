package app

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/authz"
)

// Config is every setting of the service. The zero value means the defaults;
// Validate checks it once at start. cmd/server fills it from flags and
// TASKHOOK_* variables.
type Config struct {
	Addr            string        // TASKHOOK_ADDR, default ":8080"
	PublicURL       string        // TASKHOOK_PUBLIC_URL, default "http://localhost:8080"
	RedisURL        string        // TASKHOOK_REDIS_URL; empty: the embedded store
	RedisCluster    bool          // TASKHOOK_REDIS_CLUSTER
	RedisPrefix     string        // TASKHOOK_REDIS_PREFIX, default "th:"
	Partitions      int           // TASKHOOK_PARTITIONS, default 16
	JWTSecret       string        // TASKHOOK_JWT_SECRET (HS256, at least 32 bytes)
	JWKSFile        string        // TASKHOOK_JWKS_FILE
	JWTAudience     string        // TASKHOOK_JWT_AUDIENCE
	JWTIssuer       string        // TASKHOOK_JWT_ISSUER
	JWTMaxAge       time.Duration // TASKHOOK_JWT_MAX_AGE: the longest token lifetime taken (exp - iat, or exp - now without iat); default 24h
	MaxBodyBytes    int64         // TASKHOOK_MAX_BODY_BYTES, default 1 MiB
	DefaultTTL      time.Duration // TASKHOOK_DEFAULT_TTL, default 7 days
	MaxTTL          time.Duration // TASKHOOK_MAX_TTL, default 30 days
	ShutdownTimeout time.Duration // TASKHOOK_SHUTDOWN_TIMEOUT, default 20s
	RecheckInterval time.Duration // TASKHOOK_RECHECK_INTERVAL: a waiter's safety-net re-read; default 15s
	WakeBlock       time.Duration // TASKHOOK_WAKE_BLOCK: one blocking read of a fan-in reader; default 5s
	LogLevel        string        // TASKHOOK_LOG_LEVEL: debug, info, warn, error; default info

	HookMaxDeliveries int     // TASKHOOK_HOOK_MAX_DELIVERIES: deliveries of a hook event to a group before it is dead-lettered; default 10
	HookRateLimit     float64 // TASKHOOK_HOOK_RATE_LIMIT: callbacks per second per hook; default 50
	HookBurst         int     // TASKHOOK_HOOK_BURST: callbacks a hook takes at once above its rate; default 100
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
	if c.RedisCluster && c.RedisURL == "" {
		errs = append(errs, errors.New("TASKHOOK_REDIS_CLUSTER needs TASKHOOK_REDIS_URL with the node addresses"))
	}
	if c.JWTMaxAge < 0 {
		errs = append(errs, errors.New("TASKHOOK_JWT_MAX_AGE must not be negative"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("TASKHOOK_MAX_BODY_BYTES must not be negative"))
	}
	if c.MaxTTL < 0 || c.DefaultTTL < 0 || (c.MaxTTL > 0 && c.DefaultTTL > c.MaxTTL) {
		errs = append(errs, errors.New("TASKHOOK_DEFAULT_TTL must be positive and not above TASKHOOK_MAX_TTL"))
	}
	if c.PublicURL != "" && !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		errs = append(errs, errors.New("TASKHOOK_PUBLIC_URL must start with http:// or https://"))
	}
	if c.HookMaxDeliveries < 0 {
		errs = append(errs, errors.New("TASKHOOK_HOOK_MAX_DELIVERIES must be at least 1"))
	}
	if c.HookRateLimit < 0 || c.HookRateLimit > 1000 {
		errs = append(errs, errors.New("TASKHOOK_HOOK_RATE_LIMIT must be 0 (the default: 50) to 1000 per second"))
	}
	if c.HookBurst < 0 {
		errs = append(errs, errors.New("TASKHOOK_HOOK_BURST must be at least 1"))
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		errs = append(errs, errors.New("TASKHOOK_LOG_LEVEL must be debug, info, warn or error"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://localhost:8080"
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 20 * time.Second
	}
	if c.JWTMaxAge == 0 {
		c.JWTMaxAge = authz.DefaultMaxAge
	}
	return c
}

// FromEnv fills a Config from flags (first) and TASKHOOK_* variables.
func FromEnv(args []string, getenv func(string) string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("taskhook", flag.ContinueOnError)
	str := func(p *string, name, env, usage string) { fs.StringVar(p, name, getenv(env), usage+" ("+env+")") }
	str(&c.Addr, "addr", "TASKHOOK_ADDR", "listen address")
	str(&c.PublicURL, "public-url", "TASKHOOK_PUBLIC_URL", "base URL that outside systems reach")
	str(&c.RedisURL, "redis-url", "TASKHOOK_REDIS_URL", "redis:// URL, or cluster nodes; empty for the embedded store")
	str(&c.RedisPrefix, "redis-prefix", "TASKHOOK_REDIS_PREFIX", "key prefix")
	str(&c.JWTSecret, "jwt-secret", "TASKHOOK_JWT_SECRET", "HS256 secret")
	str(&c.JWKSFile, "jwks-file", "TASKHOOK_JWKS_FILE", "JWKS file of RS256/ES256/EdDSA keys")
	str(&c.JWTAudience, "jwt-audience", "TASKHOOK_JWT_AUDIENCE", "required aud")
	str(&c.JWTIssuer, "jwt-issuer", "TASKHOOK_JWT_ISSUER", "required iss")
	str(&c.LogLevel, "log-level", "TASKHOOK_LOG_LEVEL", "debug, info, warn or error")
	var errs []error
	parse := func(env string, set func(string) error) {
		if v := getenv(env); v != "" {
			if err := set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	}
	dur := func(p *time.Duration) func(string) error {
		return func(v string) (err error) { *p, err = time.ParseDuration(v); return err }
	}
	parse("TASKHOOK_REDIS_CLUSTER", func(v string) (err error) { c.RedisCluster, err = strconv.ParseBool(v); return err })
	parse("TASKHOOK_PARTITIONS", func(v string) (err error) { c.Partitions, err = strconv.Atoi(v); return err })
	parse("TASKHOOK_MAX_BODY_BYTES", func(v string) (err error) { c.MaxBodyBytes, err = strconv.ParseInt(v, 10, 64); return err })
	parse("TASKHOOK_JWT_MAX_AGE", dur(&c.JWTMaxAge))
	fs.DurationVar(&c.JWTMaxAge, "jwt-max-age", c.JWTMaxAge, "longest token lifetime taken, such as 24h or 15m (TASKHOOK_JWT_MAX_AGE)")
	parse("TASKHOOK_DEFAULT_TTL", dur(&c.DefaultTTL))
	parse("TASKHOOK_MAX_TTL", dur(&c.MaxTTL))
	parse("TASKHOOK_SHUTDOWN_TIMEOUT", dur(&c.ShutdownTimeout))
	parse("TASKHOOK_RECHECK_INTERVAL", dur(&c.RecheckInterval))
	parse("TASKHOOK_WAKE_BLOCK", dur(&c.WakeBlock))
	parse("TASKHOOK_HOOK_MAX_DELIVERIES", func(v string) (err error) { c.HookMaxDeliveries, err = strconv.Atoi(v); return err })
	parse("TASKHOOK_HOOK_RATE_LIMIT", func(v string) (err error) { c.HookRateLimit, err = strconv.ParseFloat(v, 64); return err })
	parse("TASKHOOK_HOOK_BURST", func(v string) (err error) { c.HookBurst, err = strconv.Atoi(v); return err })
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, nil
}
