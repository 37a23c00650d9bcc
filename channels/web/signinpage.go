package web

import (
	"log/slog"
	"net/http"

	"github.com/taskhook/taskhook/tasks"
)

// SigninPage is how a provider sign-in ended, as the page the person's
// browser lands on shows it. It holds no token, code or link: only names.
type SigninPage struct {
	// Connection is the connection signed in to; "" when not known.
	Connection string `json:"connection,omitempty"`
	// Outcome is authorized, declined or failed; "" when not known.
	Outcome string `json:"outcome,omitempty"`
}

// Authorized, Declined and Failed tell the outcomes apart.
func (p SigninPage) Authorized() bool { return p.Outcome == tasks.OutcomeAuthorized }
func (p SigninPage) Declined() bool   { return p.Outcome == tasks.OutcomeDeclined }
func (p SigninPage) Failed() bool     { return p.Outcome == tasks.OutcomeFailed }

// Title says how the sign-in ended, in a few words.
func (p SigninPage) Title() string {
	to := "the provider"
	if p.Connection != "" {
		to = p.Connection
	}
	switch {
	case p.Authorized():
		return "Signed in to " + to
	case p.Declined():
		return "Sign-in to " + to + " declined"
	case p.Failed():
		return "Sign-in to " + to + " failed"
	}
	return "Sign-in finished"
}

// Fine is the page's last line.
func (SigninPage) Fine() string { return signinFine }

// signinFine ends every page of a sign-in.
const signinFine = "this page shows how one sign-in ended, nothing of its task."

// RenderSignin writes the page a finished sign-in lands on.
func RenderSignin(w http.ResponseWriter, log *slog.Logger, page SigninPage) {
	render(w, log, http.StatusOK, "signin.html", page)
}

// SigninProblems are the error pages of a sign-in link: the provider's
// redirect back to a connection callback.
var SigninProblems = Problems{fine: signinFine, byStatus: map[int]Problem{
	http.StatusNotFound: {Title: "Sign-in link already used", Message: "This sign-in link has been used already " +
		"(each works once), or it is not one the service knows. If you have just signed in, that sign-in counts: " +
		"the task goes on, and you can close this tab."},
	http.StatusGone: {Title: "Sign-in link expired", Message: "This sign-in link has run out, or its task has ended, " +
		"so nothing was signed in. If the task still needs you, it asks again with a new link; you can close this tab."},
	http.StatusServiceUnavailable: {Title: "Try again shortly", Message: "The service could not finish the sign-in " +
		"just now. Reload the page in a moment."},
}}
