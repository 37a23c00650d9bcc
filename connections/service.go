package connections

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tokens"
)

// AttemptTokenPrefix starts every sign-in attempt token: the state of an
// authorization URL, and the last part of its redirect URI in path mode.
// The token is made from the server's answer key, the task and the request
// (tasks.AnswerLinks.SigninToken), so the URL is put together when it is
// shown and never stored.
const AttemptTokenPrefix = tasks.SigninTokenPrefix

// LoopGuardWindow is how recent a sign-in is for the loop guard: a token it
// gave that the provider refuses fails the task instead of asking again.
const LoopGuardWindow = 5 * time.Minute

// ErrSigninClosed is a callback for an attempt that ran out, or whose task
// ended or is gone.
var ErrSigninClosed = errors.New("the sign-in attempt is closed")

// Config is the connections and their settings. Zero means the defaults.
type Config struct {
	Connections []Connection
	PublicURL   string           // the redirect URIs start with it; default http://localhost:8080
	SigninTTL   time.Duration    // how long an attempt's URL works; default 15 minutes
	TokenTTL    time.Duration    // how long a token is kept after its last sign-in or refresh; default 30 days
	HTTPClient  *http.Client     // calls the token endpoints; default one with a 10s timeout
	Now         func() time.Time // default time.Now
}

// Service runs sign-ins and hands out tokens.
type Service struct {
	cfg     Config
	conns   map[string]Connection
	vault   *authz.Vault
	store   *store.Store
	tasks   *tasks.Service
	metrics *metrics.Metrics
	log     *slog.Logger
}

// NewService wires the service. vault seals every token and verifier.
func NewService(cfg Config, vault *authz.Vault, s *store.Store, t *tasks.Service, m *metrics.Metrics, log *slog.Logger) *Service {
	cfg.PublicURL = strings.TrimRight(cmp.Or(cfg.PublicURL, "http://localhost:8080"), "/")
	cfg.SigninTTL = cmp.Or(cfg.SigninTTL, 15*time.Minute)
	cfg.TokenTTL = cmp.Or(cfg.TokenTTL, 30*24*time.Hour)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	conns := make(map[string]Connection, len(cfg.Connections))
	for _, c := range cfg.Connections {
		conns[c.Name] = c
	}
	return &Service{cfg: cfg, conns: conns, vault: vault, store: s, tasks: t, metrics: m, log: log}
}

// List is the configured connections, by name: no client id, no secret.
func (s *Service) List() []wire.ConnectionView {
	out := make([]wire.ConnectionView, 0, len(s.conns))
	for _, c := range s.cfg.Connections {
		out = append(out, wire.ConnectionView{Name: c.Name, Scopes: append([]string{}, c.Scopes...)})
	}
	return out
}

// Has says whether a connection named name is configured.
func (s *Service) Has(name string) bool {
	_, ok := s.conns[name]
	return ok
}

// attempt is what the store keeps under an attempt token's hash.
type attempt struct {
	Hash       string   `json:"h"`
	TaskID     string   `json:"t"`
	RequestID  string   `json:"r"`
	Connection string   `json:"c"`
	Requester  string   `json:"q"`
	Verifier   string   `json:"v"` // sealed
	Scopes     []string `json:"s"`
	ExpiresAt  int64    `json:"e"` // unix ms
	Redirect   string   `json:"u"` // with tasks.SigninPlaceholder for the token
}

// stored is what the store keeps under (requester, connection).
type stored struct {
	Sealed     string `json:"s"`
	ObtainedAt int64  `json:"o"` // unix ms of the sign-in that gave it
}

// secret is the sealed part of a stored token.
type secret struct {
	AccessToken  string    `json:"a"`
	RefreshToken string    `json:"r,omitempty"`
	TokenType    string    `json:"t,omitempty"`
	Expiry       time.Time `json:"e,omitzero"`
	Scopes       []string  `json:"s"`
}

func (s *Service) connection(name string) (Connection, error) {
	c, ok := s.conns[name]
	if !ok {
		return Connection{}, problem.Invalid("connection", "no connection named %q is configured (GET /v1/connections lists them)", name)
	}
	return c, nil
}

// oauth is the connection's client for one redirect URI.
func (c Connection) oauth(redirect string, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthorizeURL, TokenURL: c.TokenURL},
	}
}

func (s *Service) redirectURI(c Connection, token string) string {
	base := s.cfg.PublicURL + "/v1/connections/" + url.PathEscape(c.Name) + "/callback"
	if c.Return == ReturnInState {
		return base
	}
	return base + "/" + token
}

// Ask hands the owner of a task the requester's token for a connection, or,
// when there is none to use, asks the requester to sign in: the task goes
// input_required with an authorization request, and the answer is the
// pending request (a second ask while it is open gets the same one). The
// caller must be able to act for the requester now, not only when the task
// was created (see mayUseTokens).
func (s *Service) Ask(ctx context.Context, p authz.Principal, taskID string, in wire.AuthorizationAsk,
	idem idem.Key) (*wire.ConnectionToken, *wire.AuthorizationPending, error) {
	if in.Connection == "" {
		return nil, nil, problem.Invalid("connection", "is required")
	}
	c, err := s.connection(in.Connection)
	if err != nil {
		return nil, nil, err
	}
	for i, sc := range in.Scopes {
		if !validScope(sc) {
			return nil, nil, problem.Invalid(fmt.Sprintf("scopes[%d]", i), "must be printable, with no space or quote")
		}
	}
	want := union(c.Scopes, in.Scopes)
	t, err := s.tasks.Executed(ctx, p, taskID)
	if err != nil {
		return nil, nil, err
	}
	if err := mayUseTokens(p, t); err != nil {
		return nil, nil, err
	}
	if t.Status.Terminal() {
		return nil, nil, &tasks.StateError{Err: fmt.Errorf("%w: task %s is %s", tasks.ErrTerminal, t.TaskID, t.Status), Task: t}
	}
	if tok, err := s.usable(ctx, c, t.Requester, want); err != nil || tok != nil {
		return tok, nil, err
	}

	now := s.cfg.Now()
	links := s.tasks.AnswerLinks()
	requestID := ids.NewRequestID()
	hash := tokens.Hash(links.SigninToken(taskID, requestID))
	verifier := oauth2.GenerateVerifier()
	redirect := s.redirectURI(c, tasks.SigninPlaceholder) // the attempt's, with the token put in at the callback
	opts := make([]oauth2.AuthCodeOption, 0, 1+len(c.ExtraAuthParams))
	if c.PKCE {
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	for k, v := range c.ExtraAuthParams {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	expires := now.Add(s.cfg.SigninTTL)
	rec := attempt{Hash: hash, TaskID: taskID, RequestID: requestID, Connection: c.Name, Requester: t.Requester,
		Verifier: s.vault.Seal([]byte(verifier), "signin", hash), Scopes: want, ExpiresAt: expires.UnixMilli(), Redirect: redirect}
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	// Stored with a placeholder for the attempt token, in the state and in
	// the path form's redirect URI alike: readers get the URL with the token.
	req := tasks.InputRequest{
		RequestID: rec.RequestID, Kind: wire.KindAuthorization, Connection: c.Name,
		Prompt:           "Sign in to " + c.Name + " so the task can go on",
		AuthorizationURL: c.oauth(redirect, want).AuthCodeURL(tasks.SigninPlaceholder, opts...),
		ExpiresAt:        events.At(expires).String(),
	}
	open, err := s.tasks.RequireAuthorization(ctx, p, taskID, req, store.AnswerToken{Hash: hash, Value: val}, now, idem)
	if err != nil {
		return nil, nil, err
	}
	return nil, &wire.AuthorizationPending{Status: "authorization_required", RequestID: open.RequestID, Connection: c.Name,
		AuthorizationURL: links.SigninURL(taskID, open.RequestID, open.AuthorizationURL), ExpiresAt: open.ExpiresAt}, nil
}

// mayUseTokens refuses a caller who may act as the task's executor but
// whose token may not act for the task's requester: an admin that is not
// the executor, or an executor that owns the task whose grant (delegate,
// act_for) its token no longer carries. The requester's tokens, and whether
// they are kept, are the requester's and its delegates' business only. An
// executor that does not own the task was given it by the owner (a tool
// call), whose right to act for the requester was checked when the task was
// made: the task carries it.
func mayUseTokens(p authz.Principal, t tasks.Task) error {
	if p.ID != "" && p.ID == t.Executor && t.Executor != t.Owner {
		return nil
	}
	if !p.CanActFor(t.Requester) {
		return problem.ErrRequesterNotAllowed
	}
	return nil
}

// usable is the requester's token for c covering scopes, refreshed first
// when it ran out and can be; nil when there is none to use.
func (s *Service) usable(ctx context.Context, c Connection, requester string, scopes []string) (*wire.ConnectionToken, error) {
	rec, sec, err := s.load(ctx, requester, c.Name)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, authz.ErrSealed) {
		return nil, nil // none, or sealed with a key no longer held: sign in again
	}
	if err != nil {
		return nil, err
	}
	if !covers(sec.Scopes, scopes) {
		return nil, nil
	}
	if !sec.Expiry.IsZero() && !s.cfg.Now().Before(sec.Expiry.Add(-expirySkew)) {
		if sec.RefreshToken == "" {
			return nil, nil
		}
		if sec, err = s.refresh(ctx, c, requester, rec, sec); err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				return nil, err
			}
			s.log.WarnContext(ctx, "token refresh failed", "connection", c.Name, "reason", reason(err))
			return nil, nil // the refresh token no longer works: sign in again
		}
	}
	out := &wire.ConnectionToken{Connection: c.Name, AccessToken: sec.AccessToken, TokenType: cmp.Or(sec.TokenType, "Bearer"),
		Scopes: sec.Scopes}
	if !sec.Expiry.IsZero() {
		at := events.At(sec.Expiry).String()
		out.ExpiresAt = &at
	}
	return out, nil
}

// expirySkew counts a token that runs out this soon as run out: it would
// not last the call it is handed out for.
const expirySkew = 30 * time.Second

func (s *Service) refresh(ctx context.Context, c Connection, requester string, rec stored, sec secret) (secret, error) {
	old := &oauth2.Token{RefreshToken: sec.RefreshToken, Expiry: time.Unix(1, 0)} // run out: the source refreshes
	fresh, err := c.oauth("", sec.Scopes).TokenSource(s.client(ctx), old).Token()
	if err != nil {
		return secret{}, err
	}
	next := fromOAuth(fresh, sec.Scopes)
	if next.RefreshToken == "" {
		next.RefreshToken = sec.RefreshToken // the provider keeps the old one valid
	}
	rec.Sealed = s.seal(next, requester, c.Name)
	if err := s.save(ctx, requester, c.Name, rec); err != nil {
		return secret{}, err
	}
	return next, nil
}

func (s *Service) client(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, s.cfg.HTTPClient)
}

func fromOAuth(t *oauth2.Token, asked []string) secret {
	scopes := asked
	if granted, ok := t.Extra("scope").(string); ok && granted != "" {
		scopes = strings.FieldsFunc(granted, func(r rune) bool { return r == ' ' || r == ',' })
	}
	return secret{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType, Expiry: t.Expiry, Scopes: scopes}
}

func (s *Service) seal(sec secret, requester, connection string) string {
	plain, _ := json.Marshal(sec) // strings, a time and a slice: cannot fail
	return s.vault.Seal(plain, "token", requester, connection)
}

func (s *Service) load(ctx context.Context, requester, connection string) (stored, secret, error) {
	raw, err := s.store.ConnectionToken(ctx, requester, connection)
	if err != nil {
		return stored{}, secret{}, err
	}
	var rec stored
	if err := json.Unmarshal(raw, &rec); err != nil {
		return stored{}, secret{}, fmt.Errorf("decode stored token: %w", err)
	}
	plain, err := s.vault.Open(rec.Sealed, "token", requester, connection)
	if err != nil {
		return stored{}, secret{}, err
	}
	var sec secret
	if err := json.Unmarshal(plain, &sec); err != nil {
		return stored{}, secret{}, fmt.Errorf("decode sealed token: %w", err)
	}
	return rec, sec, nil
}

func (s *Service) save(ctx context.Context, requester, connection string, rec stored) error {
	raw, _ := json.Marshal(rec)
	return s.store.PutConnectionToken(ctx, requester, connection, raw, s.cfg.TokenTTL)
}

// A Landing is a provider's redirect whose sign-in attempt was found live:
// Land finds it from the path and the query alone, so a form post naming
// no live attempt is refused before its body is read, and Complete
// finishes it with every parameter.
type Landing struct {
	c     Connection
	token string
	part  int
	hash  string
	rec   attempt
}

// Land finds the attempt a redirect to the connection name is for: the
// token in its path (pathToken; "" in state mode), else the query's state.
// problem.ErrNotFound: no such attempt, or used; ErrSigninClosed: ran out,
// or its task ended.
func (s *Service) Land(ctx context.Context, name, pathToken string, query url.Values) (*Landing, error) {
	c, ok := s.conns[name]
	if !ok {
		return nil, problem.ErrNotFound
	}
	token := query.Get("state")
	if c.Return == ReturnInPath {
		token = pathToken // the state, which may come in a form, must match it (Complete)
	} else if pathToken != "" {
		return nil, problem.ErrNotFound
	}
	part, ok := tokens.Parse(token, AttemptTokenPrefix, s.store.Partitions)
	if !ok {
		return nil, problem.ErrNotFound
	}
	hash := tokens.Hash(token)
	raw, err := s.store.SigninAttempt(ctx, part, hash)
	rec, err := store.Decode[attempt]("sign-in attempt", raw, err)
	if err != nil {
		return nil, err
	}
	if !tokens.SameHash(rec.Hash, hash) || rec.Connection != c.Name {
		return nil, problem.ErrNotFound
	}
	if !s.cfg.Now().Before(time.UnixMilli(rec.ExpiresAt)) {
		return nil, ErrSigninClosed
	}
	t, err := s.tasks.Stored(ctx, rec.TaskID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && t.Status.Terminal()) {
		return nil, ErrSigninClosed
	}
	if err != nil {
		return nil, err
	}
	if _, open := t.OpenAuthorization(c.Name); !open || !awaits(t, rec.RequestID) {
		return nil, problem.ErrNotFound
	}
	return &Landing{c: c, token: token, part: part, hash: hash, rec: rec}, nil
}

// Complete finishes a landed redirect with its parameters (the form's and
// the query's): it exchanges the code, keeps the token, closes the task's
// request and returns the outcome: authorized, declined or failed. The
// attempt serves once: problem.ErrNotFound when another request claimed it
// first, or a state that is not the path's token.
func (s *Service) Complete(ctx context.Context, l *Landing, params url.Values) (string, error) {
	c, rec, token := l.c, l.rec, l.token
	if c.Return == ReturnInPath && subtle.ConstantTimeCompare([]byte(token), []byte(params.Get("state"))) != 1 {
		return "", problem.ErrNotFound
	}
	if claimed, err := s.store.ClaimSigninAttempt(ctx, l.part, l.hash); err != nil || !claimed {
		if err == nil {
			err = problem.ErrNotFound
		}
		return "", err
	}

	rec.Redirect = strings.ReplaceAll(rec.Redirect, tasks.SigninPlaceholder, token)
	outcome := s.finish(ctx, c, rec, params)
	if _, err := s.tasks.ResolveAuthorization(ctx, rec.TaskID, rec.RequestID, outcome); err != nil {
		if errors.Is(err, tasks.ErrInputClosed) {
			return "", ErrSigninClosed
		}
		return "", err
	}
	s.metrics.Connections.Signins.WithLabelValues(outcome).Inc()
	return outcome, nil
}

// finish reads the provider's answer: a code to exchange, or an error.
func (s *Service) finish(ctx context.Context, c Connection, rec attempt, params url.Values) string {
	if e := params.Get("error"); e != "" {
		if e == "access_denied" {
			return tasks.OutcomeDeclined
		}
		s.log.WarnContext(ctx, "sign-in refused by the provider", "connection", c.Name, "reason", safeWord(e))
		return tasks.OutcomeFailed
	}
	code := params.Get("code")
	if code == "" {
		return tasks.OutcomeFailed
	}
	verifier, err := s.vault.Open(rec.Verifier, "signin", rec.Hash)
	if err != nil {
		s.log.WarnContext(ctx, "sign-in verifier does not open", "connection", c.Name)
		return tasks.OutcomeFailed
	}
	var opts []oauth2.AuthCodeOption
	if c.PKCE {
		opts = append(opts, oauth2.VerifierOption(string(verifier)))
	}
	tok, err := c.oauth(rec.Redirect, rec.Scopes).Exchange(s.client(ctx), code, opts...)
	if err != nil {
		s.log.WarnContext(ctx, "sign-in code exchange failed", "connection", c.Name, "reason", reason(err))
		return tasks.OutcomeFailed
	}
	sec := fromOAuth(tok, rec.Scopes)
	if err := s.save(ctx, rec.Requester, c.Name, stored{Sealed: s.seal(sec, rec.Requester, c.Name),
		ObtainedAt: s.cfg.Now().UnixMilli()}); err != nil {
		s.log.WarnContext(ctx, "sign-in token not kept", "connection", c.Name, "err", err)
		return tasks.OutcomeFailed
	}
	return tasks.OutcomeAuthorized
}

func awaits(t tasks.Task, requestID string) bool {
	for _, r := range t.InputRequests {
		if r.RequestID == requestID {
			return true
		}
	}
	return false
}

// Reject is the loop guard: the provider refused the token the task was
// given. The token is dropped; if it came from a sign-in under
// LoopGuardWindow ago, signing in again would loop, so the task fails.
func (s *Service) Reject(ctx context.Context, p authz.Principal, taskID, name string) (wire.AuthorizationRejected, error) {
	c, ok := s.conns[name]
	if !ok {
		return wire.AuthorizationRejected{}, problem.ErrNotFound
	}
	t, err := s.tasks.Executed(ctx, p, taskID)
	if err != nil {
		return wire.AuthorizationRejected{}, err
	}
	if err := mayUseTokens(p, t); err != nil {
		return wire.AuthorizationRejected{}, err
	}
	raw, err := s.store.ConnectionToken(ctx, t.Requester, c.Name)
	if errors.Is(err, store.ErrNotFound) {
		return wire.AuthorizationRejected{Connection: c.Name, Action: "token_dropped"}, nil // nothing left to drop
	}
	if err != nil {
		return wire.AuthorizationRejected{}, err
	}
	var rec stored
	if err := json.Unmarshal(raw, &rec); err != nil {
		return wire.AuthorizationRejected{}, fmt.Errorf("decode stored token: %w", err)
	}
	if _, err := s.store.DeleteConnectionToken(ctx, t.Requester, c.Name); err != nil {
		return wire.AuthorizationRejected{}, err
	}
	if s.cfg.Now().Sub(time.UnixMilli(rec.ObtainedAt)) >= LoopGuardWindow || t.Status.Terminal() {
		return wire.AuthorizationRejected{Connection: c.Name, Action: "token_dropped"}, nil
	}
	cmd := tasks.Command{Kind: tasks.CmdFail, Error: &tasks.TaskError{Message: "authorization rejected right after sign-in"}}
	if _, err := s.tasks.Run(ctx, p, taskID, cmd, idem.Key{}); err != nil {
		return wire.AuthorizationRejected{}, err
	}
	s.metrics.Connections.Signins.WithLabelValues("rejected").Inc()
	return wire.AuthorizationRejected{Connection: c.Name, Action: "task_failed"}, nil
}

// SignOut removes the caller's own token for a connection.
func (s *Service) SignOut(ctx context.Context, p authz.Principal, name string) error {
	if _, ok := s.conns[name]; !ok {
		return problem.ErrNotFound
	}
	_, err := s.store.DeleteConnectionToken(ctx, p.ID, name)
	return err
}

func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func covers(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// reason is what a log line may say of a failed call to a token endpoint:
// the status, or the OAuth error code, never a body (it may echo a secret).
func reason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return safeWord(re.ErrorCode)
		}
		if re.Response != nil {
			return "status " + re.Response.Status
		}
	}
	return "the token endpoint did not answer"
}

// safeWord keeps a provider's error code to a short word.
func safeWord(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
