package app

import (
	"log/slog"
	"net/http"

	"github.com/taskhook/taskhook/a2a"
	"github.com/taskhook/taskhook/handlers"
)

// a2aFace is the A2A endpoint and the public agent card, over the tool,
// task and session services.
func (a *App) a2aFace(cfg Config, log *slog.Logger) ([]handlers.Face, error) {
	f, err := a2a.New(a2a.Config{
		Tasks: a.Tasks, Tools: a.Tools, Sessions: a.Sessions, Notify: a.Notify,
		PublicURL: cfg.PublicURL, Version: Version, Logger: log,
		Observe: func(method, outcome string) {
			a.Metrics.A2ARequests.WithLabelValues(method, outcome).Inc()
		},
	})
	if err != nil {
		return nil, err
	}
	// JSON-RPC at the path itself, the HTTP+JSON binding's routes below it.
	binding := []string{http.MethodGet, http.MethodPost, http.MethodDelete}
	return []handlers.Face{
		{Path: a2a.Path, Methods: []string{http.MethodPost}, Handler: f.Handler()},
		{Path: a2a.Path + "/*", Methods: binding, Handler: f.Handler()},
		{Path: a2a.CardPath, Methods: []string{http.MethodGet}, Handler: f.CardHandler()},
	}, nil
}
