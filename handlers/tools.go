package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/strictjson"
	"github.com/taskhook/taskhook/tools"
)

// putTool publishes a tool (201, Location) or replaces the caller's own
// (200). A PUT is its own repeat: it takes no Idempotency-Key.
func (a *api) putTool(w http.ResponseWriter, r *http.Request) {
	body, err := a.readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var in tools.PutInput
	if err := strictjson.Decode(body, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	name := chi.URLParam(r, "name")
	reply, err := a.tools.Put(r.Context(), principal(r), name, in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if reply.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/tools/"+name)
	}
	writeRaw(w, status, reply.JSON)
}

func (a *api) getTool(w http.ResponseWriter, r *http.Request) {
	raw, err := a.tools.Get(r.Context(), principal(r), chi.URLParam(r, "name"))
	a.writeRead(w, r, raw, err)
}

func (a *api) listTools(w http.ResponseWriter, r *http.Request) {
	a.serveList(w, r, func(cursor string, limit int) (paging.Page, error) {
		return a.tools.List(r.Context(), principal(r), cursor, limit)
	})
}

// deleteTool removes the caller's tool and answers it as it was.
func (a *api) deleteTool(w http.ResponseWriter, r *http.Request) {
	raw, err := a.tools.Delete(r.Context(), principal(r), chi.URLParam(r, "name"))
	a.writeRead(w, r, raw, err)
}

// callTool starts a task through a tool: 201 with the task and Location.
func (a *api) callTool(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	call := func(ctx context.Context, p authz.Principal, in tools.CallInput, key idem.Key) (idem.Reply, error) {
		return a.tools.Call(ctx, p, name, in, key)
	}
	creates(a, call, "/v1/tasks/", "taskId")(w, r)
}
