package slack

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
)

// Interaction types this package reads.
const (
	TypeURLVerification = "url_verification"
	TypeBlockActions    = "block_actions"
)

// MaxActions is the most actions one payload may carry. A click sends one.
const MaxActions = 25

// ErrMalformed is a payload that is not one Slack sends: a 400.
var ErrMalformed = errors.New("malformed Slack payload")

// Interaction is what ParseInteraction read from a verified request.
type Interaction struct {
	Type      string
	Challenge string   // url_verification: to echo back
	UserID    string   // block_actions: the Slack user who acted
	Answers   []Answer // block_actions: the actions on taskhook's controls, in order
}

// Answer is one action on a control Render made: the button's option or
// the text typed into a request's input.
type Answer struct {
	ActionRef
	Text string
}

// payload is the part of Slack's JSON this package reads.
type payload struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	User      struct {
		ID string `json:"id"`
	} `json:"user"`
	Actions []action `json:"actions"`
}

type action struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id"`
	BlockID  string `json:"block_id"`
	Value    string `json:"value"`
}

// ParseInteraction reads a request from Slack whose signature slacksig.Verify
// accepted: an interaction is a form with the JSON in "payload"; an Events
// API request (url_verification) is the JSON itself. Actions on controls
// Render did not make are left out; an action on one of them that does not
// read as Render wrote it is ErrMalformed.
func ParseInteraction(body []byte) (Interaction, error) {
	raw := body
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		form, err := url.ParseQuery(string(body))
		if err != nil || len(form["payload"]) != 1 {
			return Interaction{}, ErrMalformed
		}
		raw = []byte(form.Get("payload"))
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil || p.Type == "" {
		return Interaction{}, ErrMalformed
	}
	in := Interaction{Type: p.Type}
	switch p.Type {
	case TypeURLVerification:
		if p.Challenge == "" {
			return Interaction{}, ErrMalformed
		}
		in.Challenge = p.Challenge
	case TypeBlockActions:
		if p.User.ID == "" || len(p.Actions) > MaxActions {
			return Interaction{}, ErrMalformed
		}
		in.UserID = p.User.ID
		for _, a := range p.Actions {
			ans, ours, err := readAction(a)
			if err != nil {
				return Interaction{}, err
			}
			if ours {
				in.Answers = append(in.Answers, ans)
			}
		}
	}
	return in, nil
}

// readAction reads an action on a control Render made that answers a
// request (ours reports whether it was one). A click on a Sign in button
// is not one: Slack opened its link, and the sign-in ends at the
// provider's redirect back to the service.
func readAction(a action) (ans Answer, ours bool, err error) {
	switch {
	case a.Type == ElementButton && strings.HasPrefix(a.ActionID, actionAnswer):
		ref, ok := decodeRef(a.Value)
		if !ok || ref.OptionID == "" {
			return Answer{}, true, ErrMalformed
		}
		return Answer{ActionRef: ref}, true, nil
	case a.Type == ElementTextInput && strings.HasPrefix(a.ActionID, actionText):
		ref, ok := decodeRef(a.BlockID)
		if !ok || ref.OptionID != "" {
			return Answer{}, true, ErrMalformed
		}
		return Answer{ActionRef: ref, Text: a.Value}, true, nil
	}
	return Answer{}, false, nil
}

func decodeRef(s string) (ActionRef, bool) {
	var ref ActionRef
	if json.Unmarshal([]byte(s), &ref) != nil || ref.TaskID == "" || ref.RequestID == "" {
		return ActionRef{}, false
	}
	return ref, true
}
