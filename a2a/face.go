package a2a

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tools"
)

// Paths the face serves: both bindings under Path (JSON-RPC at Path
// itself, HTTP+JSON below it), the public card at CardPath.
const (
	Path     = "/a2a"
	CardPath = "/.well-known/agent-card.json"
)

// Config is what the face is built from.
type Config struct {
	Tasks    *tasks.Service
	Tools    *tools.Service
	Sessions *sessions.Service
	// Notify keeps push notification configs as task endpoints; nil
	// answers PushNotificationNotSupported, and the cards do not offer
	// them.
	Notify *endpoints.Registrar
	// PublicURL is where clients reach the server (TASKHOOK_PUBLIC_URL):
	// the cards name PublicURL+Path as both bindings' address.
	PublicURL string
	Version   string // the server's version, shown in the cards
	Logger    *slog.Logger
	// Observe counts a request: its method and outcome ("ok" or the A2A
	// error reason). Nil counts nothing.
	Observe func(method, outcome string)
}

// Face is the A2A endpoint and the public agent card.
type Face struct {
	rest, jsonrpc, card http.Handler
}

// New builds the face. A request reaches it with the principal of its
// bearer token in its context (authz.FromContext), or none: every method
// but the public card then answers Unauthenticated.
func New(cfg Config) (*Face, error) {
	if cfg.Tasks == nil || cfg.Tools == nil || cfg.Sessions == nil {
		return nil, errors.New("a2a: the task, tool and session services are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observe == nil {
		cfg.Observe = func(string, string) {}
	}
	h := &handler{cfg: cfg, tasks: cfg.Tasks, tools: cfg.Tools, sessions: cfg.Sessions, log: cfg.Logger}
	keepAlive := a2asrv.WithTransportKeepAlive(15 * time.Second)
	return &Face{
		rest:    a2asrv.NewRESTHandler(h, keepAlive),
		jsonrpc: a2asrv.NewJSONRPCHandler(h, keepAlive),
		card:    http.HandlerFunc(h.servePublicCard),
	}, nil
}

// Handler serves Path and everything below it.
func (f *Face) Handler() http.Handler { return http.HandlerFunc(f.serve) }

// CardHandler serves the public agent card at CardPath.
func (f *Face) CardHandler() http.Handler { return f.card }

// serve hands a request to its binding: JSON-RPC at Path itself, HTTP+JSON
// below it with Path taken off. A subscription may be opened with GET as
// well as POST; the HTTP+JSON transport serves it as POST.
func (f *Face) serve(w http.ResponseWriter, r *http.Request) {
	if _, ok := authz.FromContext(r.Context()); !ok {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	rest := strings.TrimPrefix(r.URL.Path, Path)
	if rest == "" || rest == "/" {
		f.jsonrpc.ServeHTTP(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = rest, ""
	if r.Method == http.MethodGet && strings.HasSuffix(rest, ":subscribe") {
		r2.Method = http.MethodPost
	}
	f.rest.ServeHTTP(w, r2)
}

// handler is a2a-go's RequestHandler over the services.
type handler struct {
	cfg      Config
	tasks    *tasks.Service
	tools    *tools.Service
	sessions *sessions.Service
	log      *slog.Logger
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// principal is who asks: the bearer token's principal, or Unauthenticated.
func principal(ctx context.Context) (authz.Principal, error) {
	p, ok := authz.FromContext(ctx)
	if !ok {
		return authz.Principal{}, a2a.NewError(a2a.ErrUnauthenticated, "a valid bearer token is required")
	}
	return p, nil
}

// done ends a request: its error in A2A's words, counted by method and
// outcome.
func (h *handler) done(ctx context.Context, method string, err *error) {
	*err = h.protocolError(ctx, *err)
	h.cfg.Observe(method, outcome(*err))
}
