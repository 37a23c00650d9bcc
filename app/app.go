// Package app wires the service: the store, the services, the router and the
// workers, started and stopped in order.
//
// It imports the services, handlers, store, authz and metrics; nothing imports
// it but cmd/server and tests.
package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/callbacks"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/connections"
	"github.com/taskhook/taskhook/handlers"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
)

// Version is set at build time.
var Version = "dev"

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
	FanIn    *store.FanIn
	Tasks    *tasks.Service
	Sessions *sessions.Service
	Resumer  *sessions.Resumer
	Hooks    *hooks.Service
	Notify   *callbacks.Registrar
	Dispatch *callbacks.Dispatcher
	// Connections is provider sign-in; nil without TASKHOOK_CONNECTIONS_FILE.
	Connections *connections.Service
	Handler     http.Handler
	// Parking holds the long-polls that wait with no goroutine, off the
	// server's connections.
	Parking *handlers.Parking

	// DevSecret is the HS256 secret made up at start when none was configured
	// (embedded store only), so `make run` can print a token for curl.
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
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level}))
	a := &App{cfg: cfg, log: log, Metrics: metrics.New()}

	secret := []byte(cfg.JWTSecret)
	if len(secret) == 0 && cfg.JWKSFile == "" {
		a.DevSecret = make([]byte, 32)
		_, _ = rand.Read(a.DevSecret)
		a.DevSecret = []byte(base64.RawURLEncoding.EncodeToString(a.DevSecret))
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
	a.FanIn = store.NewFanIn(a.Store, store.FanInConfig{Block: cfg.WakeBlock, Recheck: cfg.RecheckInterval}, a.Metrics, log, time.Now)
	guard := callbacks.Guard{AllowPrivate: cfg.AllowPrivateTargets}
	a.Notify = callbacks.NewRegistrar(guard, a.Store, vault, slackDestinations(cfg))
	a.Tasks = tasks.NewService(tasks.Config{
		DefaultTTL: cfg.DefaultTTL, MaxTTL: cfg.MaxTTL, PublicURL: cfg.PublicURL, AnswerKey: answerKey,
		MaxLive: cfg.MaxTasksPerSession, MaxTaskBytes: cfg.MaxTaskBytes, Notify: a.Notify,
	}, a.Store, a.FanIn, a.Metrics, time.Now)
	a.Sessions = sessions.NewService(sessions.Config{AnswerLinks: a.Tasks.AnswerLinks(), Notify: a.Notify}, a.Store, a.FanIn, time.Now)
	a.Dispatch = callbacks.NewDispatcher(callbacks.DispatcherConfig{
		Concurrency: cfg.NotifyConcurrency, Timeout: cfg.NotifyTimeout, RetryBase: cfg.NotifyRetryBase,
		MaxAttempts: cfg.NotifyMaxAttempts, ClaimIdle: cfg.NotifyClaimIdle, Guard: guard, Vault: vault,
		Show: a.Tasks.AnswerLinks().Event, ShowRequests: a.Tasks.AnswerLinks().ShowRequests, Slack: slackPosting(cfg),
	}, a.Store, a.Metrics, log, time.Now)
	a.Resumer = sessions.NewResumer(a.Sessions, sessions.ResumerConfig{}, log)
	hookCfg := cfg.hooks()
	hookCfg.Vault = vault
	a.Hooks, err = hooks.NewService(hookCfg, a.Store, a.FanIn, a.Tasks, a.Metrics, log, time.Now)
	if err != nil {
		return nil, err
	}
	var slackApp *handlers.Slack
	if cfg.SlackSigningSecret != "" {
		users, _ := slack.ParseUsers(cfg.SlackUsers) // Validate read it already
		slackApp = &handlers.Slack{SigningSecret: []byte(cfg.SlackSigningSecret), Users: users}
	}
	a.Connections = newConnections(cfg, conns, vault, a, log)
	a.Parking = handlers.NewParking(handlers.ParkingConfig{IdleTimeout: idleTimeout, HeaderTimeout: readHeaderTimeout}, a.Metrics)
	a.Handler = handlers.New(handlers.Deps{
		Tasks: a.Tasks, Sessions: a.Sessions, Hooks: a.Hooks, Notify: a.Notify, Slack: slackApp, Connections: a.Connections,
		Store: a.Store, Verifier: verifier, Parking: a.Parking,
		Metrics: a.Metrics, Log: log, MaxBodyBytes: cfg.MaxBodyBytes, Version: Version,
		BodyTimeout: cfg.BodyTimeout, MaxInflightBodyBytes: cfg.MaxInflightBodyBytes,
		MaxPreauthBodyBytes: cfg.MaxPreauthBodyBytes, MaxPreauthBodyBytesPerAddress: cfg.MaxPreauthBodyBytesPerAddress,
		ListRate: cfg.ListRate, ListBurst: cfg.ListBurst,
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
	ln = handlers.StampServerErrors(ln, a.log)
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
		a.FanIn.Drain() // long-polls and streams answer at once
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
			fmt.Fprintf(out, "\nDevelopment token (subject \"dev\", valid %s):\n\n  export TOKEN=%s\n\n", shortDuration(ttl), tok)
		}
	}
	<-ctx.Done()
	a.log.Info("shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	return a.Stop(stopCtx)
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
