package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// setting is one TASKHOOK_* variable: its flag, if it has one (the bot
// token and the vault keys have none, so they stay out of process lists),
// its default and meaning as -h shows them, and the Config field it fills. The
// table below is the only place variables are read, and -h and the README's
// configuration table are written from it.
type setting struct {
	env   string
	flag  string
	def   string
	usage string
	field any // a pointer to the Config field it fills
}

// settings is the table of every variable, bound to c.
func settings(c *Config) []setting {
	return []setting{
		{"TASKHOOK_ADDR", "addr", ":8080", "listen address", &c.Addr},
		{"TASKHOOK_PUBLIC_URL", "public-url", "http://localhost:8080", "base URL outside systems reach: of hook and answer URLs", &c.PublicURL},
		{"TASKHOOK_REDIS_URL", "redis-url", "(embedded)", "redis:// or rediss:// URL, or cluster seeds host:port,host:port; empty: the embedded in-memory store", &c.RedisURL},
		{"TASKHOOK_REDIS_CLUSTER", "", "false", "the URL lists Redis Cluster nodes", &c.RedisCluster},
		{"TASKHOOK_REDIS_PREFIX", "redis-prefix", "th:", "key prefix", &c.RedisPrefix},
		{"TASKHOOK_PARTITIONS", "", "16", "partitions of the keys; fixed per deployment", &c.Partitions},
		{"TASKHOOK_REDIS_TIMEOUT", "", "2s", "the whole of one Redis command; past it the request is a 503 (the embedded store: at least 30s)", &c.RedisTimeout},
		{"TASKHOOK_JWT_SECRET", "jwt-secret", "(random in dev)", "HS256 secret, at least 32 bytes", &c.JWTSecret},
		{"TASKHOOK_JWKS_FILE", "jwks-file", "", "JWKS file of RS256, ES256 and EdDSA keys", &c.JWKSFile},
		{"TASKHOOK_JWT_AUDIENCE", "jwt-audience", "", "required aud", &c.JWTAudience},
		{"TASKHOOK_JWT_ISSUER", "jwt-issuer", "", "required iss", &c.JWTIssuer},
		{"TASKHOOK_JWT_MAX_AGE", "jwt-max-age", "24h", "longest token lifetime taken (exp - iat)", &c.JWTMaxAge},
		{"TASKHOOK_ANSWER_KEY", "answer-key", "(from the JWT secret)", "base64 key (at least 32 bytes) of answer tokens, the same on every replica", &c.AnswerKey},
		{"TASKHOOK_MAX_BODY_BYTES", "", "1048576", "larger request bodies are a 413", &c.MaxBodyBytes},
		{"TASKHOOK_MAX_TASKS_PER_SESSION", "", "10000", "live tasks one session may hold", &c.MaxTasksPerSession},
		{"TASKHOOK_MAX_TASK_BYTES", "", "1048576", "a task record's largest size as JSON", &c.MaxTaskBytes},
		{"TASKHOOK_LIST_RATE", "", "20", "lists a second per principal and replica; negative: no limit", &c.ListRate},
		{"TASKHOOK_LIST_BURST", "", "10", "lists at once above that rate", &c.ListBurst},
		{"TASKHOOK_BODY_TIMEOUT", "body-timeout", "15s", "a request's whole body must arrive within it", &c.BodyTimeout},
		{"TASKHOOK_MAX_INFLIGHT_BODY_BYTES", "max-inflight-body-bytes", "67108864", "request body bytes held in memory across all requests", &c.MaxInflightBodyBytes},
		{"TASKHOOK_MAX_PREAUTH_BODY_BYTES", "", "an eighth of the above", "body bytes held by requests not yet authenticated (hook posts, answers, Slack, sign-in returns)", &c.MaxPreauthBodyBytes},
		{"TASKHOOK_MAX_PREAUTH_BODY_BYTES_PER_ADDRESS", "", "a quarter of the above", "the share of it one client address may hold", &c.MaxPreauthBodyBytesPerAddress},
		{"TASKHOOK_DEFAULT_TTL", "", "168h", "a task's lifetime when its create names none", &c.DefaultTTL},
		{"TASKHOOK_MAX_TTL", "", "720h", "the longest lifetime a task or hook may ask for", &c.MaxTTL},
		{"TASKHOOK_HOOK_MAX_DELIVERIES", "", "10", "deliveries of a hook event to a group before it is dead-lettered", &c.HookMaxDeliveries},
		{"TASKHOOK_HOOK_RATE_LIMIT", "", "50", "callbacks a second per hook (at most 1000)", &c.HookRateLimit},
		{"TASKHOOK_HOOK_BURST", "", "100", "callbacks a hook takes at once above its rate", &c.HookBurst},
		{"TASKHOOK_SHUTDOWN_TIMEOUT", "", "20s", "graceful drain on SIGTERM", &c.ShutdownTimeout},
		{"TASKHOOK_RECHECK_INTERVAL", "", "15s", "a long-poll's safety-net re-read", &c.RecheckInterval},
		{"TASKHOOK_WAKE_BLOCK", "", "5s", "one blocking read of a fan-in reader", &c.WakeBlock},
		{"TASKHOOK_LOG_LEVEL", "log-level", "info", "debug, info, warn or error", &c.LogLevel},
		{"TASKHOOK_DEBUG_ADDR", "debug-addr", "(off)", "serve net/http/pprof on this loopback address", &c.DebugAddr},
		{"TASKHOOK_DEV_SECRET_FILE", "dev-secret-file", "(made at start)", "with no JWT secret, the development secret is kept in this file (mode 0600); make run: .tmp/dev-secret", &c.DevSecretFile},
		{"TASKHOOK_NOTIFY_TIMEOUT", "", "10s", "one notification delivery attempt", &c.NotifyTimeout},
		{"TASKHOOK_NOTIFY_CONCURRENCY", "", "64", "notification deliveries under way at once on one replica", &c.NotifyConcurrency},
		{"TASKHOOK_NOTIFY_RETRY_BASE", "", "15s", "the first retry's backoff", &c.NotifyRetryBase},
		{"TASKHOOK_NOTIFY_MAX_ATTEMPTS", "", "8", "attempts before a notification is dead-lettered (at most 100)", &c.NotifyMaxAttempts},
		{"TASKHOOK_NOTIFY_CLAIM_IDLE", "", "timeout + 10s", "a delivery a dead replica left this long is taken over", &c.NotifyClaimIdle},
		{"TASKHOOK_SLACK_BOT_TOKEN", "", "", "Slack bot token (chat:write): notify endpoints may be Slack channels", &c.SlackBotToken},
		{"TASKHOOK_SLACK_API_URL", "slack-api-url", "https://slack.com/api/", "the Slack Web API's base URL", &c.SlackAPIURL},
		{"TASKHOOK_CONNECTIONS_FILE", "connections-file", "", "JSON file of the OAuth connections", &c.ConnectionsFile},
		{"TASKHOOK_VAULT_KEYS", "", "(from the JWT secret)", "id:base64key,... 32-byte keys sealing stored secrets; the first seals, all open", &c.VaultKeys},
		{"TASKHOOK_SIGNIN_TTL", "", "15m", "how long a sign-in URL works", &c.SigninTTL},
		{"TASKHOOK_ALLOW_PRIVATE_TARGETS", "", "false", "let notification endpoints reach loopback, private and metadata addresses", &c.AllowPrivateTargets},
		{"TASKHOOK_SLACK_SIGNING_SECRET", "slack-signing-secret", "", "the Slack app's signing secret; set, the interactions route is served", &c.SlackSigningSecret},
		{"TASKHOOK_MCP_ALLOWED_ORIGINS", "mcp-allowed-origins", "", "origins besides the public URL's a browser may post to /mcp from, comma-separated scheme://host[:port]", &c.MCPAllowedOrigins},
		{"TASKHOOK_SLACK_USERS", "slack-users", "", "U012AB=alice,U034CD=bob: the principal each Slack user answers as", &c.SlackUsers},
		{"TASKHOOK_SLACK_CHANNELS", "slack-channels", "", "C012=alice|bob,#ops=carol: the channels the bot may post to for each principal", &c.SlackChannels},
	}
}

// set parses a variable's value into the setting's field, as the field's
// type reads it.
func (s setting) set(v string) (err error) {
	switch p := s.field.(type) {
	case *string:
		*p = v
	case *bool:
		*p, err = strconv.ParseBool(v)
	case *int:
		*p, err = strconv.Atoi(v)
	case *int64:
		*p, err = strconv.ParseInt(v, 10, 64)
	case *float64:
		*p, err = strconv.ParseFloat(v, 64)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	default:
		panic(fmt.Sprintf("%s: a field of type %T has no parser", s.env, s.field))
	}
	return err
}

// ErrVersion is FromEnv's answer to -version: print Version and stop.
var ErrVersion = errors.New("version requested")

// FromEnv fills a Config from TASKHOOK_* variables, then flags, which win.
// -h (or -help) answers flag.ErrHelp and -version ErrVersion: the caller
// prints Usage or Version.
func FromEnv(args []string, getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	fs := flag.NewFlagSet("taskhook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range settings(&c) {
		if v := getenv(s.env); v != "" {
			if err := s.set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.env, err))
			}
		}
		if s.flag != "" {
			fs.Func(s.flag, s.usage, s.set)
		}
	}
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *version {
		return c, ErrVersion
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q: settings are flags or TASKHOOK_* variables", fs.Arg(0)))
	}
	return c, errors.Join(errs...)
}

// Usage writes what -h shows: every variable with its flag, default and
// meaning.
func Usage(w io.Writer) {
	fmt.Fprint(w, `Usage: taskhook [flags]

taskhook gives AI agents durable background tasks and webhook hooks over HTTP.
It is set up by TASKHOOK_* variables; a flag, where there is one, wins over its
variable. With no TASKHOOK_REDIS_URL it runs on an embedded in-memory store.

  -h, -help    this text
  -version     the version, as /v1/info reports it

`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variable\tflag\tdefault\tmeaning")
	for _, s := range settings(&Config{}) {
		fl := ""
		if s.flag != "" {
			fl = "-" + s.flag
		}
		def := s.def
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.env, fl, def, s.usage)
	}
	_ = tw.Flush()
}

// elsewhere are the TASKHOOK_* variables that tools beside the server read:
// the devbox example's token and the scale benchmark's stages (and, by
// prefix, the tests' TASKHOOK_TEST_*). A shell set up for them may start
// the server too.
var elsewhere = []string{"TASKHOOK_TOKEN", "TASKHOOK_SCALE_STAGES"}

// misspelt is a TASKHOOK_* variable no setting reads, and the setting's
// name closest to it, if one is close enough to be what was meant.
type misspelt struct{ name, closest string }

// unknownVariables are the TASKHOOK_* names of environ (NAME=value) that
// neither a setting nor known reads. Values are never looked at.
func unknownVariables(environ, known []string) []misspelt {
	names := map[string]bool{}
	var settingNames []string
	for _, s := range settings(&Config{}) {
		names[s.env] = true
		settingNames = append(settingNames, s.env)
	}
	for _, k := range append(known, elsewhere...) {
		names[k] = true
	}
	var out []misspelt
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "TASKHOOK_") || strings.HasPrefix(name, "TASKHOOK_TEST_") || names[name] {
			continue
		}
		out = append(out, misspelt{name: name, closest: closest(name, settingNames)})
	}
	return out
}

// closest is the candidate nearest to name by edit distance, when it is at
// most a third of the name after TASKHOOK_ away (at least 2): near enough
// to be a typo, not another word.
func closest(name string, candidates []string) string {
	best, bestDist := "", max(2, len(strings.TrimPrefix(name, "TASKHOOK_"))/3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps of
// neighbours that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
