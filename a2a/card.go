package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/problem"
)

// bearer is the name of the cards' one security scheme.
const bearer a2a.SecuritySchemeName = "bearer"

// anybody is who the public card lists tools for: the list shows a
// principal the open tools and its own, and the card keeps the open ones,
// so whoever this id might name, the card shows nothing else.
var anybody = authz.Principal{ID: "\x00anybody"}

// cardPages bounds the tool pages one card lists (100 tools a page).
const cardPages = 10

// card is the agent card with skills: both bindings at PublicURL+Path, a
// bearer JWT, streaming, push configs when served, and the extended card
// for an authenticated caller.
func (h *handler) card(skills []a2a.AgentSkill) *a2a.AgentCard {
	url := h.cfg.PublicURL + Path
	return &a2a.AgentCard{
		Name:        "taskhook",
		Description: "Durable background tasks: each skill is a tool whose call is a task that may ask a person, wait and report, and outlives the request.",
		Version:     h.cfg.Version,
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(url, a2a.TransportProtocolHTTPJSON),
			a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC),
		},
		Capabilities: a2a.AgentCapabilities{Streaming: true, ExtendedAgentCard: true,
			PushNotifications: h.cfg.Notify != nil},
		DefaultInputModes:  []string{"application/json", "text/plain"},
		DefaultOutputModes: []string{"application/json", "text/plain"},
		SecuritySchemes: a2a.NamedSecuritySchemes{
			bearer: a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT",
				Description: "a JWT as for the REST API under /v1"},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{bearer: a2a.SecuritySchemeScopes{}}},
		Skills:               skills,
	}
}

// skills are the tools p may call, as skills; with open, only the tools
// anybody may call.
func (h *handler) skills(ctx context.Context, p authz.Principal, open bool) ([]a2a.AgentSkill, error) {
	skills := []a2a.AgentSkill{}
	cursor := ""
	for range cardPages {
		page, err := h.tools.List(ctx, p, cursor, 100)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.Items {
			var t wire.Tool[json.RawMessage]
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, err
			}
			if open && !slices.Contains(t.Callers, "*") {
				continue
			}
			skills = append(skills, skill(t))
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	return skills, nil
}

// skill is a tool as a skill: its name is the id a message names in
// metadata.skill.
func skill(t wire.Tool[json.RawMessage]) a2a.AgentSkill {
	name := t.Title
	if name == "" {
		name = t.Name
	}
	return a2a.AgentSkill{
		ID: t.Name, Name: name, Description: t.Description, Tags: []string{"tool"},
		InputModes:  []string{"application/json", "text/plain"},
		OutputModes: []string{"application/json"},
	}
}

// servePublicCard answers GET CardPath: the card with the tools anybody
// may call, to anybody.
func (h *handler) servePublicCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	skills, err := h.skills(r.Context(), anybody, true)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, problem.ErrUnavailable) {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		} else {
			h.log.ErrorContext(r.Context(), "the public agent card", "err", err)
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	body, err := json.Marshal(h.card(skills))
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	_, _ = w.Write(body)
}

// GetExtendedAgentCard is the card with every tool the caller may call.
func (h *handler) GetExtendedAgentCard(ctx context.Context, _ *a2a.GetExtendedAgentCardRequest) (_ *a2a.AgentCard, err error) {
	defer h.done(ctx, "GetExtendedAgentCard", &err)
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	skills, err := h.skills(ctx, p, false)
	if err != nil {
		return nil, err
	}
	return h.card(skills), nil
}
