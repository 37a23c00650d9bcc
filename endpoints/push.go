package endpoints

import (
	"context"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"
)

// An A2A push notification config is a task endpoint of format
// wire.FormatA2A, sent the changes of the task's status. Its token goes in
// each delivery's header and is kept sealed with its signing secret, as
// "secret token" (a whsec_ secret holds no space); no read shows either.

// PushKinds are the events a push config is sent: each is a status update
// in A2A's words.
var PushKinds = []string{wire.EventTaskStatus, wire.EventTaskMessage, wire.EventTaskTerminal}

// maxTokenLen bounds a push config's token.
const maxTokenLen = 1024

// PushRequest asks for a push config on a task: where to POST, the token
// to send, and the signing secret (made by the server when empty).
type PushRequest struct {
	URL, Token, Secret string
}

// AddPush registers a push config on the task taskID, and returns its
// endpoint as its creator sees it, secret included.
func (r *Registrar) AddPush(ctx context.Context, pr authz.Principal, taskID string, req PushRequest) (wire.Endpoint, error) {
	if !validToken(req.Token) {
		return wire.Endpoint{}, problem.Invalid("token", "must be at most %d bytes of visible ASCII", maxTokenLen)
	}
	p, key, err := r.key(Owner{ID: taskID})
	if err != nil {
		return wire.Endpoint{}, err
	}
	ep, err := r.NewEndpoint(ctx, Registrant{Principal: pr.ID},
		wire.EndpointRequest{URL: req.URL, Kinds: PushKinds, Secret: req.Secret}, "pushConfig")
	if err != nil {
		return wire.Endpoint{}, err
	}
	ep.Format = wire.FormatA2A
	if _, err := r.add(ctx, pr, p, key, ep, ep.Secret+" "+req.Token, idem.Key{}); err != nil {
		return wire.Endpoint{}, err
	}
	return ep, nil
}

// SplitPush parts the opened secret of a push config's endpoint into its
// signing secret and its token.
func SplitPush(opened string) (secret, token string) {
	secret, token, _ = strings.Cut(opened, " ")
	return secret, token
}

// validToken takes what a header carries as is: visible ASCII and spaces
// inside, none at the ends.
func validToken(t string) bool {
	if len(t) > maxTokenLen || strings.TrimSpace(t) != t {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < ' ' || t[i] > '~' {
			return false
		}
	}
	return true
}
