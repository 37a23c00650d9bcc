// Package app wires the service: the store, the services, the router and the
// workers, started and stopped in order.
//
// It imports the services, handlers, parking, store, waits, authz and
// metrics; nothing imports it but cmd/server and tests.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/taskhook/taskhook/a2a"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/channels/web"
	"github.com/taskhook/taskhook/connections"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/handlers"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/loglimit"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/parking"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tools"
	"github.com/taskhook/taskhook/waits"
)

// How long the server, and Parking, wait for a connection's client to
// send its next request, and its first.
const (
	idleTimeout       = 2 * time.Minute
	readHeaderTimeout = 10 * time.Second
)

// App is one running server.
type App struct {
	cfg      Config
	log      *slog.Logger
	Metrics  *metrics.Metrics
	Store    *store.Store
	Waiters  *waits.Waiters
	FanIn    *store.FanIn
	Tasks    *tasks.Service
	Sessions *sessions.Service
	Resumer  *sessions.Resumer
	Hooks    *hooks.Service
	Notify   *endpoints.Registrar
	Dispatch *callbacks.Dispatcher
	// Connections is provider sign-in; nil without TASKHOOK_CONNECTIONS_FILE.
	Connections *connections.Service
	Tools       *tools.Service
	Handler     http.Handler
	// Parking holds the long-polls that wait with no goroutine, off the
	// server's connections.
	Parking *parking.Lot

	// DevSecret is the HS256 secret of a server with none configured
	// (embedded store only), made at start or kept in
	// TASKHOOK_DEV_SECRET_FILE, so `make run` can print a token for curl and
	// the console.
	DevSecret []byte

	server   *http.Server
	listener net.Listener
	debug    *debugServer
	served   chan error
	stopOnce sync.Once
	stopErr  error
}

// New builds everything; nothing runs until Start.
func New(ctx context.Context, cfg Config, logOut io.Writer) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var err error
	a := &App{cfg: cfg, Metrics: metrics.New()}
	log := newLogger(cfg, logOut, a.Metrics)
	a.log = log

	secret := []byte(cfg.JWTSecret)
	if len(secret) == 0 && cfg.JWKSFile == "" {
		if a.DevSecret, err = devSecret(cfg.DevSecretFile); err != nil {
			return nil, err
		}
		secret = a.DevSecret
	}
	verifier, err := authz.NewVerifier(authz.VerifierConfig{
		HMACSecret: secret, JWKSFile: cfg.JWKSFile, Audience: cfg.JWTAudience, Issuer: cfg.JWTIssuer,
		MaxAge: cfg.JWTMaxAge,
	})
	if err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	// Connections and the vault are read before the store opens: a bad file
	// stops the start with nothing to close.
	conns, err := loadConnections(cfg)
	if err != nil {
		return nil, err
	}
	warnUnknownVariables(log, cfg.Environ, conns)
	vault, vaultSource, err := cfg.vault()
	if err != nil {
		return nil, err
	}
	answerKey, keySource, err := cfg.answerKey()
	if err != nil {
		return nil, fmt.Errorf("answer key: %w", err)
	}
	a.Store, err = store.Open(ctx, store.Config{
		URL: cfg.RedisURL, Cluster: cfg.RedisCluster, Prefix: cfg.RedisPrefix, Partitions: cfg.Partitions,
		Timeout: cfg.RedisTimeout,
	}, a.Metrics, log)
	if err != nil {
		return nil, err
	}
	if a.Store.Kind == store.KindEmbedded {
		log.Warn("using the embedded in-memory store: data does not survive a restart; set TASKHOOK_REDIS_URL for a durable store")
	}
	log.Info("answer links keyed", "source", keySource)
	log.Info("stored secrets sealed", "source", vaultSource)
	if vaultSource == vaultRandom {
		log.Warn("no TASKHOOK_VAULT_KEYS: stored secrets are sealed with a key made at start, and do not open after a restart")
	}
	a.Waiters = waits.New(waits.Config{Recheck: cfg.RecheckInterval}, a.Metrics, time.Now)
	a.FanIn = store.NewFanIn(a.Store, store.FanInConfig{Block: cfg.WakeBlock}, a.Waiters.Notify, a.Metrics, log)
	guard := netguard.Guard{AllowPrivate: cfg.AllowPrivateTargets}
	a.Notify = endpoints.NewRegistrar(guard, a.Store, vault, slackDestinations(cfg))
	a.Tasks = tasks.NewService(tasks.Config{
		DefaultTTL: cfg.DefaultTTL, MaxTTL: cfg.MaxTTL, PublicURL: cfg.PublicURL, AnswerKey: answerKey,
		MaxLive: cfg.MaxTasksPerSession, MaxTaskBytes: cfg.MaxTaskBytes, Notify: a.Notify, Vault: vault,
	}, a.Store, a.Waiters, a.Metrics, time.Now)
	a.Sessions = sessions.NewService(sessions.Config{AnswerLinks: a.Tasks.AnswerLinks(), Notify: a.Notify, Vault: vault}, a.Store, a.Waiters, time.Now)
	a.Tasks.UseSessions(a.Sessions)
	a.Dispatch = callbacks.NewDispatcher(callbacks.DispatcherConfig{
		Concurrency: cfg.NotifyConcurrency, Timeout: cfg.NotifyTimeout, RetryBase: cfg.NotifyRetryBase,
		MaxAttempts: cfg.NotifyMaxAttempts, ClaimIdle: cfg.NotifyClaimIdle, Guard: guard, Vault: vault,
		Links: a.Tasks.AnswerLinks(), Slack: slackPosting(cfg), Push: a2a.Push{},
	}, a.Store, a.Metrics, log, time.Now)
	a.Tools = tools.NewService(tools.Config{Notify: a.Notify, Vault: vault}, a.Store, a.Tasks, a.Metrics, time.Now)
	a.Resumer = sessions.NewResumer(a.Sessions, sessions.ResumerConfig{}, log)
	hookCfg := cfg.hooks()
	hookCfg.Vault = vault
	a.Hooks, err = hooks.NewService(hookCfg, a.Store, a.Waiters, a.Tasks, a.Metrics, log, time.Now)
	if err != nil {
		return nil, err
	}
	var slackApp *handlers.Slack
	if cfg.SlackSigningSecret != "" {
		users, _ := slack.ParseUsers(cfg.SlackUsers) // Validate read it already
		slackApp = &handlers.Slack{SigningSecret: []byte(cfg.SlackSigningSecret), Users: users}
	}
	a.Connections = newConnections(cfg, conns, vault, a, log)
	a.Parking = parking.New(parking.Config{IdleTimeout: idleTimeout, HeaderTimeout: readHeaderTimeout}, a.Metrics)
	mcpFace, err := a.mcpFace(cfg, log)
	if err != nil {
		return nil, err
	}
	a2aFace, err := a.a2aFace(cfg, log)
	if err != nil {
		return nil, err
	}
	a.Handler = handlers.New(handlers.Deps{
		Tasks: a.Tasks, Sessions: a.Sessions, Hooks: a.Hooks, Notify: a.Notify, Slack: slackApp, Connections: a.Connections,
		Tools: a.Tools,
		Ready: a.Store.Ready, StoreKind: a.Store.Kind, Partitions: a.Store.Partitions,
		Verifier: verifier, Parking: a.Parking,
		Metrics: a.Metrics, Log: log, MaxBodyBytes: cfg.MaxBodyBytes, Version: Version,
		BodyTimeout: cfg.BodyTimeout, MaxInflightBodyBytes: cfg.MaxInflightBodyBytes,
		MaxPreauthBodyBytes: cfg.MaxPreauthBodyBytes, MaxPreauthBodyBytesPerAddress: cfg.MaxPreauthBodyBytesPerAddress,
		ListRate: cfg.ListRate, ListBurst: cfg.ListBurst, Faces: append(mcpFace, a2aFace...),
	})
	return a, nil
}

// Start runs the workers and begins serving. It returns once the listener is
// open.
func (a *App) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	ln = requestid.StampServerErrors(ln, a.log)
	a.listener = ln
	if err := a.FanIn.Start(ctx); err != nil {
		return err
	}
	if err := a.Resumer.Start(ctx); err != nil {
		return err
	}
	if err := a.Dispatch.Start(ctx); err != nil {
		return err
	}
	if err := a.Parking.Start(ctx); err != nil {
		return err
	}
	if a.cfg.DebugAddr != "" {
		if a.debug, err = startDebug(a.cfg.DebugAddr, a.log); err != nil {
			return err
		}
	}
	a.server = &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	// Parking holds connections that wait for a request, new ones and those
	// of answered parked long-polls, and gives them to the server then.
	served := a.Parking.Listener(ln)
	a.served = make(chan error, 1)
	go func() { a.served <- a.server.Serve(served) }()
	a.log.Info("listening", "addr", ln.Addr().String(), "store", a.Store.Kind, "partitions", a.Store.Partitions)
	return nil
}

// Addr is the address the server listens on.
func (a *App) Addr() string { return a.listener.Addr().String() }

// ConsoleURL is the web console on the address the server listens on, as a
// browser on this machine reaches it (localhost for all interfaces).
func (a *App) ConsoleURL() string {
	host, port, _ := net.SplitHostPort(a.Addr())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + web.ConsolePath
}

// Stop drains: it stops accepting, ends long-polls and streams, waits for
// in-flight requests, then stops the workers and closes the store, all
// within ctx.
func (a *App) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() { a.stopErr = a.stop(ctx) })
	return a.stopErr
}

func (a *App) stop(ctx context.Context) error {
	var errs []error
	if a.server != nil {
		a.Waiters.Drain() // long-polls and streams answer at once
		a.FanIn.Drain()
		if err := a.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := <-a.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	// The workers stop in the reverse order of their start, then the store
	// closes under nobody.
	errs = append(errs, a.debug.stop(ctx))
	errs = append(errs, a.Parking.Stop(ctx))  // the parked polls answer on the drain
	errs = append(errs, a.Dispatch.Stop(ctx)) // deliveries under way finish or are left to another replica
	errs = append(errs, a.Resumer.Stop(ctx))
	a.Waiters.Drain() // idempotent: it drains here when the server never ran
	errs = append(errs, a.FanIn.Stop(ctx))
	errs = append(errs, a.Store.Close())
	return errors.Join(errs...)
}

// Run starts the app and blocks until ctx ends, then stops it within the
// shutdown timeout.
func Run(ctx context.Context, cfg Config, logOut, out io.Writer) error {
	a, err := New(ctx, cfg, logOut)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	if a.DevSecret != nil {
		// A day, or less when tokens may not live that long.
		ttl := min(24*time.Hour, a.cfg.JWTMaxAge)
		tok, err := authz.IssueDevToken(a.DevSecret, "dev", nil, ttl, time.Now())
		if err == nil {
			kept := "made at start"
			if a.cfg.DevSecretFile != "" {
				kept = "kept in " + a.cfg.DevSecretFile
			}
			fmt.Fprintf(out, "\nDevelopment token (subject \"dev\", valid %s; its secret is %s):\n\n  export TOKEN=%s\n\n"+
				"Console: %s (paste the token to sign in)\n\n", shortDuration(ttl), kept, tok, a.ConsoleURL())
		}
	}
	<-ctx.Done()
	a.log.Info("shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	return a.Stop(stopCtx)
}

// warnUnknownVariables logs each TASKHOOK_* variable of environ that no
// setting reads, nor a connection's clientSecretEnv: most likely a typo,
// whose setting keeps its default.
func warnUnknownVariables(log *slog.Logger, environ []string, conns []connections.Connection) {
	var known []string
	for _, c := range conns {
		known = append(known, c.ClientSecretEnv)
	}
	for _, u := range unknownVariables(environ, known) {
		if u.closest != "" {
			log.Warn("unknown TASKHOOK_ variable", "name", u.name, "didYouMean", u.closest)
		} else {
			log.Warn("unknown TASKHOOK_ variable", "name", u.name)
		}
	}
}

// logRepeatInterval is how often a warning that repeats while the store is
// down is written at most.
const logRepeatInterval = 30 * time.Second

// newLogger is the service's JSON log. The warnings that repeat while Redis
// is down (each reader's retries, go-redis's own lines) are written at most
// once an interval each, the first in full, the next with the count of
// those held back.
func newLogger(cfg Config, out io.Writer, m *metrics.Metrics) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(loglimit.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level}), loglimit.Config{
		Interval: logRepeatInterval, Limits: store.RepeatsWhileDown, Now: cfg.Now, Held: m.LogLinesSuppressed.Inc,
	}))
}

// shortDuration writes 24h and 15m rather than 24h0m0s and 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// slackPosting is how the dispatcher posts to Slack endpoints, nil without a
// bot token.
func slackPosting(cfg Config) *callbacks.SlackConfig {
	if cfg.SlackBotToken == "" {
		return nil
	}
	return &callbacks.SlackConfig{Token: cfg.SlackBotToken, APIURL: cfg.SlackAPIURL}
}

// slackDestinations is where Slack endpoints may post for whom, nil without
// a bot token (Slack endpoints are refused).
func slackDestinations(cfg Config) *slack.Destinations {
	if cfg.SlackBotToken == "" {
		return nil
	}
	channels, _ := slack.ParseChannels(cfg.SlackChannels) // Validate read them already
	users, _ := slack.ParseUsers(cfg.SlackUsers)
	return &slack.Destinations{Channels: channels, Users: users}
}

// loadConnections reads the connections file, when one is configured.
func loadConnections(cfg Config) ([]connections.Connection, error) {
	if cfg.ConnectionsFile == "" {
		return nil, nil
	}
	return connections.LoadFile(cfg.ConnectionsFile, os.Getenv)
}

// newConnections builds provider sign-in; nil without connections.
func newConnections(cfg Config, conns []connections.Connection, vault *authz.Vault, a *App, log *slog.Logger) *connections.Service {
	if cfg.ConnectionsFile == "" {
		return nil
	}
	return connections.NewService(connections.Config{
		Connections: conns, PublicURL: cfg.PublicURL, SigninTTL: cfg.SigninTTL, TokenTTL: cfg.MaxTTL, Now: cfg.Now,
	}, vault, a.Store, a.Tasks, a.Metrics, log)
}
