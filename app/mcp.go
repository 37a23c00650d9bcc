package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/handlers"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/mcp"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/requestlog"
	"github.com/taskhook/taskhook/tasks"
	"github.com/taskhook/taskhook/tools"
)

// mcpFace is the MCP endpoint and its protected resource metadata, over
// the tools and task services, its held answers parked on a.Parking.
func (a *App) mcpFace(cfg Config, log *slog.Logger) ([]handlers.Face, error) {
	var origins []string
	for _, o := range strings.Split(cfg.MCPAllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	late := requestlog.New(log, a.Metrics, func(w http.ResponseWriter, _ *http.Request, err error) {
		log.Error("a held MCP answer", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
	})
	h, err := mcp.New(mcp.Config{
		Backend: mcpBackend{tasks: a.Tasks, tools: a.Tools},
		Authenticate: func(r *http.Request) (authz.Principal, error) {
			if p, ok := authz.FromContext(r.Context()); ok {
				return p, nil
			}
			return authz.Principal{}, errors.New("a valid bearer token is required")
		},
		PublicURL: cfg.PublicURL, AllowedOrigins: origins, MaxBodyBytes: cfg.MaxBodyBytes,
		ServerVersion: Version,
		Park:          mcp.LotParker(a.Parking, late, a.Tasks.Draining()),
		Draining:      a.Tasks.Draining(),
		Logger:        log,
		Observe: func(method, outcome string) {
			a.Metrics.MCPRequests.WithLabelValues(method, outcome).Inc()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("TASKHOOK_MCP_ALLOWED_ORIGINS: %w", err)
	}
	var issuers []string
	if cfg.JWTIssuer != "" {
		issuers = []string{cfg.JWTIssuer}
	}
	meta := mcp.MetadataHandler(cfg.PublicURL, issuers)
	// GET and DELETE reach the endpoint for its own 405 (it takes POST
	// only: no stream of its own, no session to end), after its Origin
	// check.
	return []handlers.Face{
		{Path: mcp.Path, Methods: []string{http.MethodPost, http.MethodGet, http.MethodDelete}, Handler: h},
		{Path: mcp.MetadataPath, Methods: []string{http.MethodGet}, Handler: meta},
		{Path: mcp.MetadataPath + mcp.Path, Methods: []string{http.MethodGet}, Handler: meta},
	}, nil
}

// mcpBackend is the MCP face's Backend over the tools and task services:
// each method is one service call and a change of shape, its refusals told
// in the words the face reads (mcp.ErrUnavailable, ErrEnded, ErrNotOpen).
type mcpBackend struct {
	tasks *tasks.Service
	tools *tools.Service
}

var _ mcp.Backend = mcpBackend{}

// mcpPage is how many tools or tasks one MCP list answers.
const mcpPage = 100

func (b mcpBackend) Tools(ctx context.Context, p authz.Principal, cursor string) (mcp.ToolPage, error) {
	page, err := b.tools.List(ctx, p, cursor, mcpPage)
	if err != nil {
		return mcp.ToolPage{}, mcpError(err)
	}
	out := mcp.ToolPage{Tools: make([]mcp.Tool, 0, len(page.Items)), Next: page.Next}
	for _, raw := range page.Items {
		var t wire.Tool[string]
		if err := json.Unmarshal(raw, &t); err != nil {
			return mcp.ToolPage{}, fmt.Errorf("a listed tool: %w", err)
		}
		out.Tools = append(out.Tools, mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	return out, nil
}

func (b mcpBackend) Call(ctx context.Context, p authz.Principal, c mcp.Call) (mcp.Task, error) {
	reply, err := b.tools.Call(ctx, p, c.Tool, tools.CallInput{Arguments: c.Arguments, TTLMs: c.TTLMs}, idem.Key{})
	if err != nil {
		return mcp.Task{}, mcpError(err)
	}
	return wireTask(reply.JSON)
}

func (b mcpBackend) Task(ctx context.Context, p authz.Principal, id string) (mcp.Task, error) {
	_, raw, err := b.tasks.Get(ctx, p, id)
	if err != nil {
		return mcp.Task{}, mcpError(err)
	}
	return wireTask(raw)
}

func (b mcpBackend) Tasks(ctx context.Context, p authz.Principal, cursor string) (mcp.TaskPage, error) {
	page, err := b.tasks.List(ctx, p, tasks.ListFilter{}, cursor, mcpPage)
	if err != nil {
		return mcp.TaskPage{}, mcpError(err)
	}
	out := mcp.TaskPage{Tasks: make([]mcp.Task, 0, len(page.Items)), Next: page.Next}
	for _, raw := range page.Items {
		t, err := wireTask(raw)
		if err != nil {
			return mcp.TaskPage{}, err
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

func (b mcpBackend) Cancel(ctx context.Context, p authz.Principal, id string) (mcp.Task, error) {
	reply, err := b.tasks.Run(ctx, p, id, tasks.Command{Kind: tasks.CmdCancel, LiveOnly: true}, idem.Key{})
	if ended, ok := tasks.Ended(err); ok {
		raw, merr := json.Marshal(ended)
		if merr != nil {
			return mcp.Task{}, merr
		}
		t, werr := wireTask(raw)
		return t, errors.Join(mcp.ErrEnded, werr)
	}
	if err != nil {
		return mcp.Task{}, mcpError(err)
	}
	return wireTask(reply.JSON)
}

func (b mcpBackend) Answer(ctx context.Context, p authz.Principal, id string, answers []wire.Answer) (mcp.Task, error) {
	reply, err := b.tasks.Run(ctx, p, id, tasks.Command{Kind: tasks.CmdRespond, Responses: answers,
		Answerer: tasks.Answerer{By: p.ID, Via: wire.ViaMCP}, OpenOnly: true}, idem.Key{})
	var state *tasks.StateError
	if errors.As(err, &state) {
		return mcp.Task{}, mcp.ErrNotOpen
	}
	if err != nil {
		return mcp.Task{}, mcpError(err)
	}
	return wireTask(reply.JSON)
}

func (b mcpBackend) Watch(ctx context.Context, p authz.Principal, id string, after int64) mcp.Watch {
	return taskWatch{b.tasks.PollFor(ctx, p, id, tasks.MaxWait, func(t tasks.Task) bool { return t.Revision > after })}
}

// taskWatch is a task service long-poll as the face's Watch.
type taskWatch struct{ poll *tasks.Poll }

func (w taskWatch) Waits() bool { return w.poll.Waits() }

func (w taskWatch) Wait(ctx context.Context) (mcp.Task, error) { return watched(w.poll.Wait(ctx)) }

func (w taskWatch) Park(ctx context.Context, answer func(mcp.Task, error)) {
	w.poll.Park(ctx, func(_ tasks.Task, raw []byte, err error) { answer(watched(nil, raw, err)) })
}

func (w taskWatch) Leave() { w.poll.Leave() }

func watched(_ any, raw []byte, err error) (mcp.Task, error) {
	if err != nil {
		return mcp.Task{}, mcpError(err)
	}
	return wireTask(raw)
}

// wireTask is a task's JSON, as the services answer it, in the face's shape.
func wireTask(raw []byte) (mcp.Task, error) {
	var t mcp.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return mcp.Task{}, fmt.Errorf("a task's json: %w", err)
	}
	return t, nil
}

// mcpError tells a service's refusal in the face's words: an unreachable or
// busy store is mcp.ErrUnavailable; not-found and validation errors pass as
// they are.
func mcpError(err error) error {
	if errors.Is(err, problem.ErrUnavailable) {
		return fmt.Errorf("%w: %w", mcp.ErrUnavailable, err)
	}
	return err
}
