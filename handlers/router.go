// Package handlers is the HTTP layer: chi routes that decode and validate a
// request, call a service and map its errors to the contract's codes. It
// holds no business rules. Long-polls that must wait are parked through a
// parking.Lot, which holds them and connections that wait for a request off
// net/http's goroutine per connection.
//
// It imports the services (tasks, sessions, hooks, tools, connections, endpoints),
// the shapes they answer in (idem, paging, problem, ids, events, waits for
// log reads), parking (holding waiting requests off net/http), slacksig,
// channels, authz, metrics and api/wire, never store; no service imports it.
//
// The HTTP machinery it shares with the other faces lives in packages of
// its own, which hold no route: strictjson (strict decoding of bodies),
// bodylimit (the size, deadline and budgets bodies are read under),
// requestid and requestlog (the id, log line and metrics of each request),
// listlimit (the rate of lists per principal) and jsonhtml (literal HTML
// characters in JSON answers). Their refusals are mapped to the API's
// error shape here, with the services' (bodyerrors.go).
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/taskhook/taskhook/api/wire"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/bodylimit"
	"github.com/taskhook/taskhook/channels/web"
	"github.com/taskhook/taskhook/connections"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/hooks"
	"github.com/taskhook/taskhook/listlimit"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/parking"
	"github.com/taskhook/taskhook/requestid"
	"github.com/taskhook/taskhook/requestlog"
	"github.com/taskhook/taskhook/sessions"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tools"
)

// Deps is what the routes need.
type Deps struct {
	Tasks        *tasks.Service
	Sessions     *sessions.Service
	Hooks        *hooks.Service       // nil: the hook routes are not mounted
	Notify       *endpoints.Registrar // nil: the notification routes are not mounted
	Slack        *Slack               // nil: the Slack interactions route is not mounted
	Connections  *connections.Service // nil: the connection routes are not mounted
	Tools        *tools.Service       // nil: the tool routes are not mounted
	Verifier     *authz.Verifier
	Metrics      *metrics.Metrics
	Log          *slog.Logger
	Parking      *parking.Lot // nil: long-polls wait in their handlers
	MaxBodyBytes int64        // default 1 MiB
	Version      string       // reported by /v1/info

	// Ready answers /readyz: nil while the store answers.
	Ready func(context.Context) error
	// StoreKind (redis, redis-cluster or embedded) and Partitions are
	// reported by /v1/info.
	StoreKind  string
	Partitions int

	// BodyTimeout is how long a request's body may take to arrive (default
	// 15s); MaxInflightBodyBytes bounds the body bytes held in memory across
	// authenticated requests (default 64 MiB, at least MaxBodyBytes).
	BodyTimeout          time.Duration
	MaxInflightBodyBytes int64
	// MaxPreauthBodyBytes bounds, apart, the bytes of bodies read before a
	// bearer token is verified (default an eighth of MaxInflightBodyBytes),
	// and MaxPreauthBodyBytesPerAddress what one client address holds of
	// them (default a quarter of that); both are at least MaxBodyBytes.
	MaxPreauthBodyBytes           int64
	MaxPreauthBodyBytesPerAddress int64

	// ListRate and ListBurst bound the lists one principal makes on this
	// replica (default 20 a second, bursts of 10); a negative ListRate turns
	// the bound off.
	ListRate  float64
	ListBurst int

	// Faces are further protocols served on the same port (the MCP
	// endpoint, its resource metadata), mounted under the router's body
	// limits, request ids and log. A request with a valid bearer token
	// reaches its face with the principal in its context
	// (authz.FromContext) and its body on the authenticated budget; any
	// other request reaches it without one, for the face to refuse in its
	// own words.
	Faces []Face
}

// Face is a handler served at Path for each of Methods (the routes the API
// document lists).
type Face struct {
	Path    string
	Methods []string
	Handler http.Handler
}

type api struct {
	tasks       *tasks.Service
	sessions    *sessions.Service
	hooks       *hooks.Service
	notify      *endpoints.Registrar
	connections *connections.Service
	tools       *tools.Service
	ready       func(context.Context) error
	storeKind   string
	partitions  int
	verifier    *authz.Verifier
	metrics     *metrics.Metrics
	requestLog  *requestlog.Observer
	log         *slog.Logger
	body        *bodylimit.Guard
	lists       *listlimit.Limiter // nil: lists are not limited
	parking     *parking.Lot       // nil: long-polls wait in their handlers
	version     string
	slack       *Slack
	caps        []string // for /v1/info
}

// New builds the router.
func New(d Deps) http.Handler {
	a := &api{
		tasks: d.Tasks, sessions: d.Sessions, hooks: d.Hooks, notify: d.Notify, connections: d.Connections,
		tools: d.Tools,
		ready: d.Ready, storeKind: d.StoreKind, partitions: d.Partitions,
		verifier: d.Verifier, metrics: d.Metrics, log: d.Log, version: d.Version, slack: d.Slack, caps: capabilities,
		parking: d.Parking,
	}
	a.requestLog = requestlog.New(d.Log, d.Metrics, a.writeError)
	if d.Slack != nil {
		a.caps = append(append([]string(nil), capabilities...), "slack")
	}
	if d.ListRate >= 0 {
		perSecond, burst := d.ListRate, d.ListBurst
		if perSecond == 0 {
			perSecond = 20
		}
		if burst == 0 {
			burst = 10
		}
		a.lists = listlimit.New(perSecond, burst)
	}
	a.body = bodylimit.New(bodylimit.Limits{Max: d.MaxBodyBytes, Timeout: d.BodyTimeout, Inflight: d.MaxInflightBodyBytes,
		Preauth: d.MaxPreauthBodyBytes, PerAddress: d.MaxPreauthBodyBytesPerAddress},
		d.Metrics.BodyBytes, d.Metrics.PreauthBodyBytes)
	r := chi.NewRouter()
	r.Use(a.body.Middleware, requestid.Middleware, capabilityHeaders, a.requestLog.Middleware)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, errNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		if allow := allowedMethods(r, req); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeAPIError(w, apiError(http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "method not allowed on this route"))
	})

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Method(http.MethodGet, "/metrics", d.Metrics.Handler())

	// The web console: static files, no data without a bearer token. It is
	// not part of the API document.
	r.Get("/", a.root)
	r.Get("/console", http.RedirectHandler(web.ConsolePath, http.StatusMovedPermanently).ServeHTTP)
	r.Method(http.MethodGet, web.ConsolePath+"*", web.Console())

	for _, f := range d.Faces {
		for _, m := range f.Methods {
			r.With(a.identify).Method(m, f.Path, f.Handler)
		}
	}

	r.Route("/v1", func(r chi.Router) {
		r.Group(func(r chi.Router) {
			r.Use(a.authenticate)
			r.Get("/info", a.info)

			r.Post("/sessions", a.createSession)
			r.Get("/sessions", a.limitLists(a.listSessions))
			r.Get("/sessions/{sessionId}", a.getSession)
			r.Get("/sessions/{sessionId}/events", a.sessionEvents)
			r.Post("/sessions/{sessionId}/cancel", a.cancelSession)
			r.Post("/sessions/{sessionId}/reset", a.sessionEnd(http.StatusCreated, a.sessions.Reset))

			r.Post("/tasks", creates(a, a.tasks.Create, "/v1/tasks/", "taskId"))
			r.Get("/tasks", a.limitLists(a.listTasks))
			r.Get("/tasks/{taskId}", a.getTask)
			r.Get("/tasks/{taskId}/result", a.taskResult)
			r.Get("/tasks/{taskId}/events", a.taskEvents)
			r.Get("/tasks/{taskId}/render", a.renderTask)
			r.Post("/tasks/{taskId}/progress", a.taskCommand(tasks.CmdProgress))
			r.Post("/tasks/{taskId}/messages", a.taskCommand(tasks.CmdMessage))
			r.Post("/tasks/{taskId}/input-requests", a.taskCommand(tasks.CmdRequireInput))
			r.Post("/tasks/{taskId}/input", a.taskCommand(tasks.CmdRespond))
			r.Post("/tasks/{taskId}/complete", a.taskCommand(tasks.CmdComplete))
			r.Post("/tasks/{taskId}/fail", a.taskCommand(tasks.CmdFail))
			r.Post("/tasks/{taskId}/cancel", a.cancelTask)
			r.Post("/tasks/{taskId}/release", a.taskCommand(tasks.CmdRelease))
			if a.notify != nil {
				for _, owner := range []string{"/sessions/{sessionId}", "/tasks/{taskId}"} {
					r.Post(owner+"/notify", a.addEndpoint)
					r.Get(owner+"/notify", a.listEndpoints)
					r.Delete(owner+"/notify/{endpointId}", a.removeEndpoint)
				}
				r.Get("/sessions/{sessionId}/notify/dead-letters", a.deadLetters)
			}

			if a.connections != nil {
				r.Get("/connections", a.listConnections)
				r.Delete("/connections/{name}/token", a.signOut)
				r.Post("/tasks/{taskId}/authorizations", a.askAuthorization)
				r.Post("/tasks/{taskId}/authorizations/{name}/reject", a.rejectAuthorization)
			}

			if a.tools != nil {
				r.Get("/tools", a.limitLists(a.listTools))
				r.Put("/tools/{name}", a.putTool)
				r.Get("/tools/{name}", a.getTool)
				r.Delete("/tools/{name}", a.deleteTool)
				r.Post("/tools/{name}/call", a.callTool)
			}

			if a.hooks != nil {
				r.Post("/hooks", creates(a, a.hooks.Create, "/v1/hooks/", "hookId"))
				r.Get("/hooks", a.limitLists(a.listHooks))
				r.Get("/hooks/{hookId}", a.getHook)
				r.Post("/hooks/{hookId}/close", a.closeHook)
				r.Get("/hooks/{hookId}/events", a.hookEvents)
				r.Post("/hooks/{hookId}/ack", a.ackHook)
				r.Get("/hooks/{hookId}/log", a.hookLog)
			}
		})
		// Capability routes: the token in the path is the credential.
		// (capabilityHeaders sets their headers on every answer.)
		r.Get("/input/{token}", a.answerPage)
		r.Post("/input/{token}", a.answerInputAny)
		if a.hooks != nil {
			r.Post("/callback/{token}", a.callback)
		}
		// Signed by Slack: the signature is the credential.
		if a.slack != nil {
			r.Post("/channels/slack/interactions", a.slackInteractions)
		}
		if a.connections != nil {
			r.Get("/connections/{name}/callback", a.signInReturn)
			r.Get("/connections/{name}/callback/{token}", a.signInReturn)
			r.Post("/connections/{name}/callback/{token}", a.signInReturn)
			r.Get("/connections/signed-in", a.signedIn)
		}
	})
	return r
}
