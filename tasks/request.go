package tasks

import (
	"fmt"
	"regexp"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/problem"
)

// Limits on input requests.
const (
	MaxRequestsPerCall = 64
	maxOptions         = 25
	maxPromptBytes     = 4000
	maxLabelBytes      = 200
	maxAnswerBytes     = 8000
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// PrepareRequests fills what the server chooses for a new batch: request ids
// the caller left out (from newID) and the default display and options.
func PrepareRequests(reqs []InputRequest, newID func() string) []InputRequest {
	out := make([]InputRequest, len(reqs))
	for i, r := range reqs {
		if r.RequestID == "" {
			r.RequestID = newID()
		}
		if r.Kind == "" {
			r.Kind = wire.KindAsk
		}
		if r.Display == "" {
			switch {
			case len(r.Options) > 0:
				r.Display = wire.DisplaySelect
			case r.AllowFreeform:
				r.Display = wire.DisplayText
			case r.Kind == wire.KindAsk:
				r.Display = wire.DisplayConfirmation
			}
		}
		if r.Display == wire.DisplayConfirmation && len(r.Options) == 0 {
			r.Options = []Option{
				{ID: "yes", Label: "Yes", Style: "primary"},
				{ID: "no", Label: "No", Style: "default"},
			}
		}
		out[i] = r
	}
	return out
}

// validateRequest checks one request of a require_input batch on its own.
func validateRequest(r InputRequest, field string) error {
	if !idPattern.MatchString(r.RequestID) {
		return problem.Invalid(field+".requestId", "must be 1 to 64 of A-Z a-z 0-9 _ . : -")
	}
	switch r.Kind {
	case wire.KindAsk:
	case wire.KindAuthorization:
		// Only the service asks for a sign-in: it needs an attempt, a state
		// and a verifier that an executor's request could not carry.
		return problem.Invalid(field+".kind", "an authorization request is made by POST /v1/tasks/{taskId}/authorizations, not here")
	default:
		return problem.Invalid(field+".kind", "must be %q or %q", wire.KindAsk, wire.KindAuthorization)
	}
	if r.Prompt == "" || len(r.Prompt) > maxPromptBytes {
		return problem.Invalid(field+".prompt", "is required, at most %d bytes", maxPromptBytes)
	}
	switch r.Display {
	case "", wire.DisplayConfirmation, wire.DisplaySelect, wire.DisplayText:
	default:
		return problem.Invalid(field+".display", "must be confirmation, select or text")
	}
	if len(r.Options) > maxOptions {
		return problem.Invalid(field+".options", "at most %d options", maxOptions)
	}
	ids := make(map[string]bool, len(r.Options))
	for j, o := range r.Options {
		of := fmt.Sprintf("%s.options[%d]", field, j)
		if !idPattern.MatchString(o.ID) {
			return problem.Invalid(of+".id", "must be 1 to 64 of A-Z a-z 0-9 _ . : -")
		}
		if ids[o.ID] {
			return problem.Invalid(of+".id", "%q is used twice", o.ID)
		}
		ids[o.ID] = true
		if o.Label == "" || len(o.Label) > maxLabelBytes {
			return problem.Invalid(of+".label", "is required, at most %d bytes", maxLabelBytes)
		}
		switch o.Style {
		case "", "primary", "danger", "default":
		default:
			return problem.Invalid(of+".style", "must be primary, danger or default")
		}
	}
	if r.Kind == wire.KindAsk && len(r.Options) == 0 && !freeform(r) {
		return problem.Invalid(field+".options", "a question needs options, allowFreeform or display text")
	}
	if r.ExpiresAt != "" {
		if _, err := time.Parse(time.RFC3339Nano, r.ExpiresAt); err != nil {
			return problem.Invalid(field+".expiresAt", "must be an RFC 3339 time")
		}
	}
	return nil
}

func freeform(r InputRequest) bool { return r.AllowFreeform || r.Display == wire.DisplayText }

// accepts checks one answer against the open request it answers. A decline
// or a cancel answers any question, and says nothing more.
func accepts(r InputRequest, resp Answer, field string) error {
	if action(resp) != wire.ActionAccept {
		return nil
	}
	if resp.OptionID == "" && resp.Text == "" {
		return problem.Invalid(field, "optionId or text is required")
	}
	if resp.OptionID != "" && !hasOption(r, resp.OptionID) {
		return problem.Invalid(field+".optionId", "%q is not an option of request %s", resp.OptionID, r.RequestID)
	}
	if resp.Text != "" {
		if !freeform(r) {
			return problem.Invalid(field+".text", "request %s takes no free text", r.RequestID)
		}
		if len(resp.Text) > maxAnswerBytes {
			return problem.Invalid(field+".text", "at most %d bytes", maxAnswerBytes)
		}
	}
	return nil
}

// checkAction checks an answer's action, whatever request it answers: a
// decline or a cancel says nothing more than that.
func checkAction(resp Answer, field string) error {
	switch resp.Action {
	case "", wire.ActionAccept:
		return nil
	case wire.ActionDecline, wire.ActionCancel:
		if resp.OptionID != "" || resp.Text != "" {
			return problem.Invalid(field+".action", "a %s carries no optionId or text", resp.Action)
		}
		return nil
	}
	return problem.Invalid(field+".action", "must be %s, %s or %s", wire.ActionAccept, wire.ActionDecline, wire.ActionCancel)
}

func hasOption(r InputRequest, id string) bool {
	for _, o := range r.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}
