package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

type (
	// ConnectionToken is a provider token the service handed to a task. Its
	// fields:
	//
	//	Connection  string
	//	AccessToken string   // keep it out of logs
	//	TokenType   string
	//	ExpiresAt   *string  // RFC 3339; nil: the provider gave no expiry
	//	Scopes      []string
	ConnectionToken = wire.ConnectionToken
	// AuthorizationPending is a token request waiting for the requester to
	// sign in: the task is input_required with the request. Its fields:
	//
	//	Status           string // authorization_required
	//	RequestID        string
	//	Connection       string
	//	AuthorizationURL string // where the requester signs in
	//	ExpiresAt        string // RFC 3339
	AuthorizationPending = wire.AuthorizationPending
	// AuthorizationRejected is what the loop guard did with a refused token.
	// Its fields:
	//
	//	Connection string
	//	Action     string // token_dropped or task_failed
	AuthorizationRejected = wire.AuthorizationRejected
	// ConnectionView is a connection the service signs people into. Its
	// fields:
	//
	//	Name   string
	//	Scopes []string
	ConnectionView = wire.ConnectionView
)

// SigninError is a sign-in that ended without a token: Outcome is declined
// (the person said no) or failed (the provider did not give a token).
type SigninError struct {
	Connection string
	RequestID  string
	Outcome    string
}

func (e *SigninError) Error() string {
	return fmt.Sprintf("taskhook: the sign-in to %s was %s", e.Connection, e.Outcome)
}

// Connections lists the connections the service signs people into.
func (c *Client) Connections(ctx context.Context, opts ...CallOption) ([]ConnectionView, error) {
	var out struct {
		Items []ConnectionView `json:"items"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/v1/connections", nil, nil, &out, opts); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Authorize asks once for the requester's token: a token (200), or the
// pending sign-in (202) that put the task in input_required.
func (c *Client) Authorize(ctx context.Context, taskID, connection string, scopes []string, opts ...CallOption) (*ConnectionToken, *AuthorizationPending, error) {
	var raw json.RawMessage
	status, err := c.do(ctx, http.MethodPost, taskPath(taskID, "/authorizations"), nil,
		wire.AuthorizationAsk{Connection: connection, Scopes: scopes}, &raw, opts)
	if err != nil {
		return nil, nil, err
	}
	if status == http.StatusAccepted {
		var p AuthorizationPending
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("taskhook: decode the pending sign-in: %w", err)
		}
		return nil, &p, nil
	}
	var t ConnectionToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, nil, fmt.Errorf("taskhook: decode the token: %w", err)
	}
	return &t, nil, nil
}

// Token returns the requester's token for a connection, waiting through the
// sign-in when one is needed (for as long as ctx lasts): the task is
// input_required meanwhile, and the person opens the request's
// authorizationUrl. A declined or failed sign-in is a *SigninError.
func (c *Client) Token(ctx context.Context, taskID, connection string, opts ...CallOption) (*ConnectionToken, error) {
	for {
		tok, pending, err := c.Authorize(ctx, taskID, connection, nil, opts...)
		if err != nil || tok != nil {
			return tok, err
		}
		outcome, err := c.waitSignin(ctx, taskID, pending.RequestID)
		if err != nil {
			return nil, err
		}
		switch outcome {
		case "authorized", "expired":
			continue // the token is there now, or a fresh sign-in is asked for
		default:
			return nil, &SigninError{Connection: connection, RequestID: pending.RequestID, Outcome: outcome}
		}
	}
}

// waitSignin follows the task until its sign-in request is answered and
// returns the outcome.
func (c *Client) waitSignin(ctx context.Context, taskID, requestID string) (string, error) {
	var after int64
	for {
		t, err := c.WaitTask(ctx, taskID, after, 30*time.Second,
			WithKinds(wire.EventAuthorizationCompleted, wire.EventTaskTerminal))
		if err != nil {
			return "", err
		}
		for _, r := range t.InputResponses {
			if r.RequestID == requestID {
				return r.OptionID, nil
			}
		}
		if t.Terminal() {
			return "", &Error{Status: http.StatusConflict, Code: wire.CodeTaskTerminal,
				Message: "the task ended during the sign-in", Task: t}
		}
		after = t.Revision
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
}

// Reject tells the service the provider refused the token the task was
// given (the loop guard): the token is dropped, and if it came from a
// sign-in moments ago the task fails rather than asking again.
func (c *Client) Reject(ctx context.Context, taskID, connection string, opts ...CallOption) (*AuthorizationRejected, error) {
	return fetch[AuthorizationRejected](ctx, c, http.MethodPost,
		taskPath(taskID, "/authorizations/"+url.PathEscape(connection)+"/reject"), nil, struct{}{}, opts)
}

// SignOut removes the caller's own token for a connection.
func (c *Client) SignOut(ctx context.Context, connection string, opts ...CallOption) error {
	_, err := c.do(ctx, http.MethodDelete, "/v1/connections/"+url.PathEscape(connection)+"/token", nil, nil, nil, opts)
	return err
}

// IsSigninError reports whether err is a sign-in that ended without a token.
func IsSigninError(err error) bool {
	var s *SigninError
	return errors.As(err, &s)
}
