// Package tools holds published tools: an executor publishes a tool (a
// name, a description, a JSON Schema of its arguments, who may call it and
// the endpoint that hears of its calls), and a caller calls it, which
// starts a durable task that the tool's publisher executes (SPEC 12.1).
//
// Tools live in Redis like everything else, each in the partition its name
// falls in; a replica keeps nothing of them but compiled schemas, keyed by
// the tool's revision, so a call reads its tool every time (one round trip
// before the task's create).
//
// It imports tasks (a call's task is created through tasks.CreateWith),
// endpoints (the tool's endpoint: SSRF check, kinds, secret), store, idem,
// paging, problem, authz, events, cache, metrics and api/wire, never a face.
package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/cache"
	"github.com/taskhook/taskhook/endpoints"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/metrics"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tasks"
)

// Tool is a published tool as the API shows it.
type Tool = wire.Tool[events.Time]

// PutInput is the body of PUT /v1/tools/{name}.
type PutInput = wire.PutTool[json.RawMessage]

// CallInput is the body of POST /v1/tools/{name}/call.
type CallInput = wire.CallTool[json.RawMessage]

// The bounds of what a tool may hold.
const (
	MaxTitleBytes       = 200
	MaxDescriptionBytes = 8 << 10
	MaxSchemaBytes      = 64 << 10 // each of inputSchema and outputSchema, as sent
	MaxCallers          = 100
	maxPrincipalBytes   = 512
)

// validName is what a tool's name may be: it is a key part and a task kind.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Config holds the tools' collaborators. Zero sizes mean the defaults.
type Config struct {
	// Notify checks a tool's endpoint (the SSRF guard, its kinds, its
	// secret); nil refuses every put.
	Notify *endpoints.Registrar
	// Vault seals the endpoint's secret, as for every notification
	// endpoint (the dispatcher opens it with the same keys).
	Vault *authz.Vault
	// SchemaCacheSize is how many compiled input schemas a replica keeps;
	// default 1000.
	SchemaCacheSize int
}

// Service publishes, reads and calls tools.
type Service struct {
	cfg     Config
	store   *store.Store
	tasks   *tasks.Service
	metrics *metrics.Metrics
	schemas *cache.LRU[*jsonschema.Schema] // by name, creation and revision
	hints   *cache.LRU[hint]               // by name: the tools this replica called lately (HintTTL)
	now     func() time.Time
}

// NewService wires the service. now is the clock (time.Now in production).
func NewService(cfg Config, s *store.Store, t *tasks.Service, m *metrics.Metrics, now func() time.Time) *Service {
	cfg.SchemaCacheSize = cmp.Or(cfg.SchemaCacheSize, 1000)
	return &Service{cfg: cfg, store: s, tasks: t, metrics: m, schemas: cache.New[*jsonschema.Schema](cfg.SchemaCacheSize),
		hints: cache.New[hint](cfg.SchemaCacheSize), now: now}
}

// checkName refuses a name no tool may have.
func checkName(name string) error {
	if !validName.MatchString(name) {
		return problem.Invalid("name", "must be 1 to 64 letters, digits, _ or -")
	}
	return nil
}

// PutReply is the answer of a put: the tool as its executor sees it, the
// new endpoint's secret included, and whether the put created it.
type PutReply struct {
	JSON    []byte
	Created bool
}

// putTries bounds the reads and writes of one put (or delete) that other
// puts of the same name keep overtaking.
const putTries = 5

// Put publishes the tool name as p, or replaces the one p published under
// it. A name another principal holds is problem.ErrToolNameTaken. Every put
// registers the endpoint anew: its secret is in this answer only, and tasks
// started before keep the endpoint they were started with.
func (s *Service) Put(ctx context.Context, p authz.Principal, name string, in PutInput) (PutReply, error) {
	if err := checkName(name); err != nil {
		return PutReply{}, err
	}
	open, callers, err := checkPut(in)
	if err != nil {
		return PutReply{}, err
	}
	ep, err := s.newEndpoint(ctx, p, in.Endpoint)
	if err != nil {
		return PutReply{}, err
	}
	records := store.NewEndpoints{
		List:    endpoints.ViewJSON([]wire.Endpoint{ep}),
		Secrets: []string{ep.EndpointID, endpoints.SealSecret(s.cfg.Vault, ep.EndpointID, ep.Secret)},
	}
	for range putTries {
		was, err := s.store.ReadToolState(ctx, name)
		if err != nil {
			return PutReply{}, err
		}
		if was.Executor != "" && was.Executor != p.ID {
			return PutReply{}, problem.ErrToolNameTaken
		}
		now := s.now()
		created := now.UnixMilli()
		if was.Executor != "" {
			created = was.Created
		}
		t := Tool{
			Name: name, Title: in.Title, Description: in.Description, InputSchema: in.InputSchema,
			OutputSchema: in.OutputSchema, Executor: p.ID, Callers: callers,
			CreatedAt: events.At(time.UnixMilli(created)), LastUpdatedAt: events.At(now),
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return PutReply{}, err
		}
		res, err := s.store.PutTool(ctx, store.ToolPut{
			Name: name, Executor: p.ID, Was: was, JSON: raw, Open: open, Indexed: append(slices.Clone(callers), p.ID),
			Created: created, Endpoints: records,
		})
		if err != nil {
			return PutReply{}, err
		}
		switch res.Outcome {
		case store.OK:
			t.Endpoint = &ep
			answer, err := json.Marshal(t)
			s.forget(name)
			return PutReply{JSON: answer, Created: res.Created}, err
		case store.NameTaken:
			return PutReply{}, problem.ErrToolNameTaken
		case store.Conflict:
			continue
		default:
			return PutReply{}, res.Outcome.Unexpected("put tool")
		}
	}
	return PutReply{}, fmt.Errorf("%w: tool %s changed under every try", problem.ErrUnavailable, name)
}

// checkPut checks a put's body: whether anyone may call the tool, and its
// callers as shown (["*"], or the principals named).
func checkPut(in PutInput) (open bool, callers []string, err error) {
	switch {
	case len(in.Title) > MaxTitleBytes:
		return false, nil, problem.Invalid("title", "at most %d bytes", MaxTitleBytes)
	case in.Description == "":
		return false, nil, problem.Invalid("description", "is required")
	case len(in.Description) > MaxDescriptionBytes:
		return false, nil, problem.Invalid("description", "at most %d bytes", MaxDescriptionBytes)
	case in.Endpoint == nil:
		return false, nil, problem.Invalid("endpoint", "is required: where the executor hears of calls")
	}
	if err := checkSchema(in.InputSchema, "inputSchema", true); err != nil {
		return false, nil, err
	}
	if err := checkSchema(in.OutputSchema, "outputSchema", false); err != nil {
		return false, nil, err
	}
	return checkCallers(in.Callers)
}

// checkSchema checks one of a tool's schemas: present when required, not
// above MaxSchemaBytes, a JSON Schema object that compiles; an input schema
// must describe an object, since arguments are one.
func checkSchema(raw json.RawMessage, field string, required bool) error {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return problem.Invalid(field, "is required: a JSON Schema object")
		}
		return nil
	}
	if len(raw) > MaxSchemaBytes {
		return problem.Invalid(field, "at most %d bytes", MaxSchemaBytes)
	}
	if _, err := compileSchema(raw, field); err != nil {
		return err
	}
	if field == "inputSchema" {
		var top struct {
			Type json.RawMessage `json:"type"`
		}
		if json.Unmarshal(raw, &top) != nil || string(top.Type) != `"object"` {
			return problem.Invalid(field+".type", `must be "object": a tool's arguments are an object`)
		}
	}
	return nil
}

// checkCallers reads a tool's callers: ["*"] opens it to everyone; else
// each principal named (at most MaxCallers) may call it besides its
// executor. None means the executor alone.
func checkCallers(callers []string) (open bool, shown []string, err error) {
	if slices.Equal(callers, []string{wire.ToolCallersAll}) {
		return true, callers, nil
	}
	if len(callers) > MaxCallers {
		return false, nil, problem.Invalid("callers", "at most %d principals (or [\"*\"] for everyone)", MaxCallers)
	}
	for i, c := range callers {
		field := "callers[" + strconv.Itoa(i) + "]"
		switch {
		case c == wire.ToolCallersAll:
			return false, nil, problem.Invalid(field, `"*" stands alone: ["*"] opens the tool to everyone`)
		case c == "" || len(c) > maxPrincipalBytes:
			return false, nil, problem.Invalid(field, "must be a principal of 1 to %d bytes", maxPrincipalBytes)
		case slices.Contains(callers[:i], c):
			return false, nil, problem.Invalid(field, "is listed twice")
		}
	}
	return false, append([]string{}, callers...), nil
}

// newEndpoint checks a tool's endpoint through the registrar, with the
// tool kinds by default. A tool's endpoint is a URL: its executor's.
func (s *Service) newEndpoint(ctx context.Context, p authz.Principal, req *wire.EndpointRequest) (wire.Endpoint, error) {
	if s.cfg.Notify == nil {
		return wire.Endpoint{}, problem.Invalid("endpoint", "notification endpoints are not enabled on this server")
	}
	if req.Slack != nil {
		return wire.Endpoint{}, problem.Invalid("endpoint.slack", "a tool's endpoint is a URL of its executor")
	}
	r := *req
	if r.Kinds == nil {
		r.Kinds = wire.DefaultToolKinds
	}
	return s.cfg.Notify.NewEndpoint(ctx, endpoints.Registrant{Principal: p.ID, Requester: p.ID}, r, "endpoint")
}

// Get reads a tool p may call or publishes; any other is
// problem.ErrNotFound, as a missing one.
func (s *Service) Get(ctx context.Context, p authz.Principal, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	rec, err := s.store.ToolFor(ctx, name, p.ID, false)
	if err != nil {
		return nil, err
	}
	return view(p, rec)
}

// List pages through the tools p may call or publishes, newest first; each
// item is the JSON of a Tool as p sees it. cursor is the Next of the page
// before ("" for the first).
func (s *Service) List(ctx context.Context, p authz.Principal, cursor string, limit int) (paging.Page, error) {
	after, err := paging.After(cursor)
	if err != nil {
		return paging.Page{}, err
	}
	recs, next, err := s.store.ListTools(ctx, p.ID, after, limit)
	if err != nil {
		return paging.Page{}, err
	}
	items := make([][]byte, len(recs))
	for i, rec := range recs {
		if items[i], err = view(p, rec); err != nil {
			return paging.Page{}, err
		}
	}
	return paging.Page{Items: items, Next: next}, nil
}

// view is a tool as p sees it: with its endpoint (never the secret) when p
// is its executor.
func view(p authz.Principal, rec store.ToolRecord) ([]byte, error) {
	if rec.Executor != p.ID || rec.Endpoints == nil {
		return rec.JSON, nil
	}
	var t Tool
	if err := json.Unmarshal(rec.JSON, &t); err != nil {
		return nil, fmt.Errorf("decode tool: %w", err)
	}
	eps, err := endpoints.Views(rec.Endpoints)
	if err != nil {
		return nil, err
	}
	if len(eps) > 0 {
		t.Endpoint = &eps[0]
	}
	return json.Marshal(t)
}

// Delete removes a tool p published and answers it as it was; any other
// is problem.ErrNotFound. Tasks started through it go on, with its
// endpoint.
func (s *Service) Delete(ctx context.Context, p authz.Principal, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	for range putTries {
		was, err := s.store.ReadToolState(ctx, name)
		if err != nil {
			return nil, err
		}
		if was.Executor == "" || was.Executor != p.ID {
			return nil, problem.ErrNotFound
		}
		res, err := s.store.DeleteTool(ctx, name, p.ID, was)
		if err != nil {
			return nil, err
		}
		switch res.Outcome {
		case store.OK:
			s.forget(name)
			res.Deleted.Executor = p.ID
			return view(p, res.Deleted)
		case store.Missing:
			return nil, problem.ErrNotFound
		case store.Conflict:
			continue
		default:
			return nil, res.Outcome.Unexpected("delete tool")
		}
	}
	return nil, fmt.Errorf("%w: tool %s changed under every try", problem.ErrUnavailable, name)
}
