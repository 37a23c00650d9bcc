package endpoints

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/channels/slack"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/netguard"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/replay"
	"github.com/taskhook/taskhook/stdwebhooks"
	"github.com/taskhook/taskhook/store"
)

// IDPrefix starts every notification endpoint id.
const IDPrefix = "ep_"

// Registrar checks endpoint requests and makes their records: the one place
// that decides what a notification endpoint may be. It also adds, removes
// and lists the endpoints of an existing session or task.
type Registrar struct {
	guard netguard.Guard
	store *store.Store
	vault *authz.Vault // seals each endpoint's secret before it is stored
	// slackTo is where Slack endpoints may post for whom; nil: Slack
	// endpoints are refused (no bot token is configured).
	slackTo *slack.Destinations
}

// NewRegistrar wires the registrar; v seals endpoint secrets (the
// dispatcher opens them with the same keys); slackTo says where Slack
// endpoints may post, nil refusing them all.
func NewRegistrar(g netguard.Guard, s *store.Store, v *authz.Vault, slackTo *slack.Destinations) *Registrar {
	return &Registrar{guard: g, store: s, vault: v, slackTo: slackTo}
}

// Registrant is who registers endpoints: the principal asking, and the
// requester whose own Slack user may be sent direct messages (a task's
// requester; for a session, which has none, its owner).
type Registrant struct {
	Principal string
	Requester string
}

// NewEndpoint checks one endpoint request (field names it in errors, e.g.
// "notify[1]") that who registers, and returns the endpoint as its creator
// sees it (the secret of a URL endpoint included).
func (r *Registrar) NewEndpoint(ctx context.Context, who Registrant, req wire.EndpointRequest, field string) (wire.Endpoint, error) {
	if req.Slack != nil {
		return r.newSlackEndpoint(who, req, field)
	}
	if req.URL == "" {
		return wire.Endpoint{}, problem.Invalid(field+".url", "is required (or slack)")
	}
	if len(req.URL) > netguard.MaxURLLen {
		return wire.Endpoint{}, problem.Invalid(field+".url", "is longer than %d bytes", netguard.MaxURLLen)
	}
	if err := r.guard.CheckURL(ctx, req.URL); err != nil {
		var te *netguard.TargetError
		if errors.As(err, &te) {
			return wire.Endpoint{}, problem.Invalid(field+".url", "%s", te.Reason)
		}
		return wire.Endpoint{}, problem.Invalid(field+".url", "cannot be checked: %v", err)
	}
	kinds, err := endpointKinds(req.Kinds, wire.DefaultNotifyKinds, field+".kinds")
	if err != nil {
		return wire.Endpoint{}, err
	}
	secret := req.Secret
	if secret == "" {
		secret = stdwebhooks.NewSecret()
	} else if key, err := stdwebhooks.DecodeSecret(secret); err != nil || len(key) < 16 || len(key) > 64 {
		return wire.Endpoint{}, problem.Invalid(field+".secret", "must be whsec_ followed by the base64 of 16 to 64 bytes")
	}
	return wire.Endpoint{
		EndpointID: IDPrefix + ids.Random(20), URL: req.URL, Kinds: kinds,
		Status: wire.EndpointActive, Secret: secret,
	}, nil
}

// newSlackEndpoint checks a Slack destination: the server must have a bot
// token, the request names a channel and no URL or secret, and the channel
// is one who may have the bot post to (slack.Destinations.Allows).
func (r *Registrar) newSlackEndpoint(who Registrant, req wire.EndpointRequest, field string) (wire.Endpoint, error) {
	switch {
	case r.slackTo == nil:
		return wire.Endpoint{}, problem.Invalid(field+".slack", "Slack is not configured on this server (TASKHOOK_SLACK_BOT_TOKEN)")
	case req.URL != "" || req.Secret != "":
		return wire.Endpoint{}, problem.Invalid(field+".slack", "takes no url or secret")
	case !validChannel(req.Slack.Channel):
		return wire.Endpoint{}, problem.Invalid(field+".slack.channel", "must be a channel id or #name of at most 80 characters")
	case !r.slackTo.Allows(req.Slack.Channel, who.Principal, who.Requester):
		return wire.Endpoint{}, problem.Invalid(field+".slack.channel",
			"is not open to you: name a channel TASKHOOK_SLACK_CHANNELS allows you, or the requester's own Slack user")
	}
	kinds, err := endpointKinds(req.Kinds, wire.DefaultSlackKinds, field+".kinds")
	if err != nil {
		return wire.Endpoint{}, err
	}
	return wire.Endpoint{
		EndpointID: IDPrefix + ids.Random(20), Slack: &wire.SlackTarget{Channel: req.Slack.Channel},
		Kinds: kinds, Status: wire.EndpointActive,
	}, nil
}

// validChannel takes Slack channel ids (C0123ABCD) and names (#deploys).
func validChannel(c string) bool {
	if c == "" || len(c) > 80 {
		return false
	}
	for _, r := range strings.TrimPrefix(c, "#") {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// NewEndpoints checks the endpoints of a create (field "notify") that who
// registers, and returns them as their creator sees them and as the store
// keeps them.
func (r *Registrar) NewEndpoints(ctx context.Context, who Registrant, reqs []wire.EndpointRequest) ([]wire.Endpoint, store.NewEndpoints, error) {
	if r == nil && len(reqs) > 0 {
		return nil, store.NewEndpoints{}, problem.Invalid("notify", "notification endpoints are not enabled on this server")
	}
	if len(reqs) > wire.MaxEndpoints {
		return nil, store.NewEndpoints{}, problem.Invalid("notify", "holds at most %d endpoints", wire.MaxEndpoints)
	}
	if len(reqs) == 0 {
		return []wire.Endpoint{}, store.NewEndpoints{}, nil
	}
	out := make([]wire.Endpoint, len(reqs))
	for i, req := range reqs {
		ep, err := r.NewEndpoint(ctx, who, req, fmt.Sprintf("notify[%d]", i))
		if err != nil {
			return nil, store.NewEndpoints{}, err
		}
		out[i] = ep
	}
	return out, r.records(out), nil
}

// records is how the store keeps endpoints: their views without secrets,
// and each one's secret, sealed.
func (r *Registrar) records(eps []wire.Endpoint) store.NewEndpoints {
	if len(eps) == 0 {
		return store.NewEndpoints{}
	}
	rec := store.NewEndpoints{List: ViewJSON(eps)}
	for _, ep := range eps {
		if ep.Secret != "" {
			rec.Secrets = append(rec.Secrets, ep.EndpointID, SealSecret(r.vault, ep.EndpointID, ep.Secret))
		}
	}
	return rec
}

// ViewJSON is the endpoint list as every read shows it: without secrets.
func ViewJSON(eps []wire.Endpoint) []byte {
	views := make([]wire.Endpoint, len(eps))
	for i, ep := range eps {
		ep.Secret = ""
		views[i] = ep
	}
	b, _ := json.Marshal(views)
	return b
}

// Views reads a stored endpoint list (nil: none) as its owner sees it:
// without the endpoints a task's executor holds (store.EndpointByExecutor).
// The scripts rewrite the list with Lua's JSON encoder, which writes an
// empty array as {}; an endpoint always has kinds, so this never meets one.
func Views(list []byte) ([]wire.Endpoint, error) {
	all, err := stored(list)
	if err != nil {
		return nil, err
	}
	out := []wire.Endpoint{}
	for _, ep := range all {
		if !ep.ByExecutor {
			out = append(out, ep.Endpoint)
		}
	}
	return out, nil
}

// Find is the endpoint of a stored list with id, the executor's included:
// deliveries go to both.
func Find(list []byte, id string) (wire.Endpoint, bool) {
	all, err := stored(list)
	if err != nil {
		return wire.Endpoint{}, false
	}
	for _, ep := range all {
		if ep.EndpointID == id {
			return ep.Endpoint, true
		}
	}
	return wire.Endpoint{}, false
}

// storedEndpoint is an endpoint as a list keeps it. Its byExecutor tag is
// store.EndpointByExecutor (a tag cannot name a constant).
type storedEndpoint struct {
	wire.Endpoint
	ByExecutor bool `json:"byExecutor"`
}

func stored(list []byte) ([]storedEndpoint, error) {
	var out []storedEndpoint
	if len(list) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(list, &out); err != nil {
		return nil, fmt.Errorf("decode endpoint list: %w", err)
	}
	return out, nil
}

// endpointKinds checks the event types an endpoint asks for; none means
// def.
func endpointKinds(kinds, def []string, field string) ([]string, error) {
	if kinds == nil {
		return slices.Clone(def), nil
	}
	if len(kinds) == 0 {
		return nil, problem.Invalid(field, "must name at least one event type (leave it out for the default ones)")
	}
	seen := make(map[string]bool, len(kinds))
	for i, k := range kinds {
		if !slices.Contains(wire.EventTypes, k) {
			return nil, problem.Invalid(fmt.Sprintf("%s[%d]", field, i), "is not an event type")
		}
		if seen[k] {
			return nil, problem.Invalid(fmt.Sprintf("%s[%d]", field, i), "is listed twice")
		}
		seen[k] = true
	}
	return slices.Clone(kinds), nil
}

// Owner names the session or task that holds endpoints.
type Owner struct {
	Session bool   // a session's endpoints; else a task's
	ID      string // its id
}

// key is the owner's record hash and partition; ErrNotFound for an id no
// partition holds.
func (r *Registrar) key(o Owner) (int, string, error) {
	prefix := ids.TaskPrefix
	if o.Session {
		prefix = ids.SessionPrefix
	}
	p, err := ids.PartitionOf(o.ID, prefix, r.store.Partitions)
	if err != nil {
		return 0, "", problem.ErrNotFound
	}
	if o.Session {
		return p, r.store.Keys.Session(p, o.ID), nil
	}
	return p, r.store.Keys.Task(p, o.ID), nil
}

// Add registers one more endpoint (field "notify" names it in errors) and
// returns it as its creator sees it, secret included.
func (r *Registrar) Add(ctx context.Context, pr authz.Principal, o Owner, req wire.EndpointRequest, idemKey idem.Key) (idem.Reply, error) {
	p, key, err := r.key(o)
	if err != nil {
		return idem.Reply{}, err
	}
	who := Registrant{Principal: pr.ID}
	if req.Slack != nil {
		if who.Requester, err = r.requesterOf(ctx, pr, key); err != nil {
			return idem.Reply{}, err
		}
	}
	ep, err := r.NewEndpoint(ctx, who, req, "notify")
	if err != nil {
		return idem.Reply{}, err
	}
	return r.add(ctx, pr, p, key, ep, ep.Secret, idemKey)
}

// add stores ep (its sealed value made of kept: the secret, or a push
// config's secret and token) and answers it as its creator sees it.
func (r *Registrar) add(ctx context.Context, pr authz.Principal, p int, key string, ep wire.Endpoint, kept string, idemKey idem.Key) (idem.Reply, error) {
	resp, err := json.Marshal(ep)
	if err != nil {
		return idem.Reply{}, err
	}
	view := ep
	view.Secret = ""
	viewJSON, err := json.Marshal(view)
	if err != nil {
		return idem.Reply{}, err
	}
	res, err := r.store.AddEndpoint(ctx, store.EndpointChange{
		Partition: p, Key: key, Principal: pr.ID, Admin: pr.Admin(), ID: ep.EndpointID,
		View: viewJSON, Secret: SealSecret(r.vault, ep.EndpointID, kept), Max: wire.MaxEndpoints, Idem: idemKey, Response: replay.Seal(r.vault, pr, resp),
	})
	if err != nil {
		return idem.Reply{}, err
	}
	switch res.Outcome {
	case store.OK:
		return idem.Reply{JSON: resp}, nil
	case store.TooManyEndpoints:
		return idem.Reply{}, problem.ErrTooManyEndpoints
	}
	return replay.Settle(r.vault, pr, res.Outcome, res.ReplayBody, "add endpoint")
}

// requesterOf is whose own Slack user an endpoint added to the record at
// key may message: a task's requester, a session's owner. Both are fixed
// when the record is made, so what this read finds still holds when the
// endpoint is written.
func (r *Registrar) requesterOf(ctx context.Context, pr authz.Principal, key string) (string, error) {
	raw, err := r.store.GetOwned(ctx, key, pr.ID, pr.Admin(), false)
	if errors.Is(err, store.ErrNotFound) {
		return "", problem.ErrNotFound
	}
	if err != nil {
		return "", err
	}
	var rec struct {
		Owner     string `json:"owner"`
		Requester string `json:"requester"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return "", fmt.Errorf("read the owner of %s: %w", key, err)
	}
	return cmp.Or(rec.Requester, rec.Owner), nil
}

// Remove deletes an endpoint, and returns the endpoints left; deliveries
// already queued for it are dropped.
func (r *Registrar) Remove(ctx context.Context, pr authz.Principal, o Owner, endpointID string) ([]wire.Endpoint, error) {
	p, key, err := r.key(o)
	if err != nil {
		return nil, err
	}
	res, err := r.store.RemoveEndpoint(ctx, store.EndpointChange{
		Partition: p, Key: key, Principal: pr.ID, Admin: pr.Admin(), ID: endpointID,
	})
	if err != nil {
		return nil, err
	}
	if res.Outcome != store.OK {
		return nil, problem.ErrNotFound
	}
	return Views(res.Endpoints)
}

// List reads the owner's endpoints, as any read shows them (no secrets).
func (r *Registrar) List(ctx context.Context, pr authz.Principal, o Owner) ([]wire.Endpoint, error) {
	_, key, err := r.key(o)
	if err != nil {
		return nil, err
	}
	rec, err := r.store.GetOwnedWithEndpoints(ctx, key, pr.ID, pr.Admin())
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return Views(rec.Endpoints)
}

// DeadLetters reads a session's dead letters (its own endpoints' and its
// tasks') after a cursor, for its owner.
func (r *Registrar) DeadLetters(ctx context.Context, pr authz.Principal, sessionID, after string, limit int) ([]wire.DeadLetter[events.Time], string, error) {
	p, key, err := r.key(Owner{Session: true, ID: sessionID})
	if err != nil {
		return nil, "", err
	}
	if _, err := r.store.GetOwned(ctx, key, pr.ID, pr.Admin(), false); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, "", problem.ErrNotFound
		}
		return nil, "", err
	}
	dls, err := r.store.DeadLetters(ctx, p, sessionID, after, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]wire.DeadLetter[events.Time], len(dls))
	cursor := after
	for i, d := range dls {
		out[i] = wire.DeadLetter[events.Time]{
			EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType, TaskID: d.TaskID,
			Attempts: d.Attempts, LastError: d.LastError, At: events.At(d.At),
		}
		cursor = d.ID
	}
	return out, cursor, nil
}
