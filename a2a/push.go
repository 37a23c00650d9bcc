package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/endpoints"
)

// A push notification config is one of the task's notify endpoints, of
// format wire.FormatA2A (endpoints.AddPush): its id is the endpoint's, and
// the outbox delivers it each change of the task's status as an A2A
// StreamResponse, with its token and the Standard Webhooks signature.

// SignatureScheme is the authentication scheme of a config that names its
// own signing secret ("whsec_..." as credentials). A config without one is
// given a secret, shown once, in the answer that created it, under this
// scheme.
const SignatureScheme = "StandardWebhooks"

// CreateTaskPushConfig adds a push config to the task.
func (h *handler) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (_ *a2a.PushConfig, err error) {
	defer h.done(ctx, "CreateTaskPushConfig", &err)
	p, err := h.pushCaller(ctx)
	if err != nil {
		return nil, err
	}
	secret := ""
	if req.Auth != nil {
		if !strings.EqualFold(req.Auth.Scheme, SignatureScheme) {
			return nil, a2a.NewError(a2a.ErrInvalidParams,
				fmt.Sprintf("authentication.scheme: only %s is supported (credentials: the signing secret)", SignatureScheme))
		}
		secret = req.Auth.Credentials
	}
	ep, err := h.cfg.Notify.AddPush(ctx, p, string(req.TaskID), endpoints.PushRequest{URL: req.URL, Token: req.Token, Secret: secret})
	if err != nil {
		return nil, err
	}
	out := pushConfig(string(req.TaskID), ep)
	out.Token = req.Token
	out.Auth = &a2a.PushAuthInfo{Scheme: SignatureScheme, Credentials: ep.Secret}
	return out, nil
}

// GetTaskPushConfig answers one of the task's push configs, without its
// token or secret.
func (h *handler) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (_ *a2a.PushConfig, err error) {
	defer h.done(ctx, "GetTaskPushConfig", &err)
	_, configs, err := h.pushConfigs(ctx, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	for _, c := range configs {
		if c.ID == req.ID {
			return c, nil
		}
	}
	return nil, noConfig(req.ID)
}

// ListTaskPushConfigs answers all the task's push configs (at most
// wire.MaxEndpoints: one page).
func (h *handler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (_ *a2a.ListTaskPushConfigResponse, err error) {
	defer h.done(ctx, "ListTaskPushConfigs", &err)
	_, configs, err := h.pushConfigs(ctx, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	return &a2a.ListTaskPushConfigResponse{Configs: configs}, nil
}

// DeleteTaskPushConfig removes one of the task's push configs.
func (h *handler) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) (err error) {
	defer h.done(ctx, "DeleteTaskPushConfig", &err)
	p, configs, err := h.pushConfigs(ctx, string(req.TaskID))
	if err != nil {
		return err
	}
	for _, c := range configs {
		if c.ID == req.ID {
			_, err := h.cfg.Notify.Remove(ctx, p, endpoints.Owner{ID: string(req.TaskID)}, req.ID)
			return err
		}
	}
	return noConfig(req.ID)
}

// pushCaller is who asks, when push configs are served.
func (h *handler) pushCaller(ctx context.Context) (authz.Principal, error) {
	if h.cfg.Notify == nil {
		return authz.Principal{}, a2a.ErrPushNotificationNotSupported
	}
	return principal(ctx)
}

// pushConfigs are the task's push configs as reads show them, to the
// caller p.
func (h *handler) pushConfigs(ctx context.Context, taskID string) (p authz.Principal, _ []*a2a.PushConfig, err error) {
	if p, err = h.pushCaller(ctx); err != nil {
		return p, nil, err
	}
	eps, err := h.cfg.Notify.List(ctx, p, endpoints.Owner{ID: taskID})
	if err != nil {
		return p, nil, err
	}
	out := []*a2a.PushConfig{}
	for _, ep := range eps {
		if ep.Format == wire.FormatA2A {
			out = append(out, pushConfig(taskID, ep))
		}
	}
	return p, out, nil
}

// pushConfig is an endpoint as a push config, without token or secret.
func pushConfig(taskID string, ep wire.Endpoint) *a2a.PushConfig {
	return &a2a.PushConfig{TaskID: a2a.TaskID(taskID), ID: ep.EndpointID, URL: ep.URL}
}

func noConfig(id string) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("id: the task has no push config %q", id))
}

// Push writes the deliveries of push configs (callbacks.PushFormat).
type Push struct{}

// PushBody is an event of the task's log, as readers see it, as a
// StreamResponse: a status update while the task is live, the whole task
// (its final status and its result artifact) once it has ended, so that a
// receiver has the outcome without reading it back; false for an event
// that carries no task.
func (Push) PushBody(event []byte) ([]byte, bool) {
	var ev logEvent
	if json.Unmarshal(event, &ev) != nil || ev.Data.Task == nil {
		return nil, false
	}
	t := *ev.Data.Task
	var update a2a.Event = shape(t, nil)
	if !t.Status.Terminal() {
		updates := events(ev, t)
		update = updates[len(updates)-1]
	}
	body, err := json.Marshal(a2a.StreamResponse{Event: update})
	if err != nil {
		return nil, false
	}
	return body, true
}
