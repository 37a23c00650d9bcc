package web

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/tasks"
)

//go:embed templates/*.html
var templateFiles embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"optionClass": optionClass,
}).ParseFS(templateFiles, "templates/*.html"))

// WantsHTML reports whether the request prefers an HTML page to JSON: a
// browser opening a link does; an API client asking for JSON, or for
// nothing in particular, does not.
func WantsHTML(r *http.Request) bool {
	html, json := acceptWeights(r)
	return html > 0 && html > json
}

// PrefersJSON reports whether the request prefers JSON to an HTML page: an
// API client asking for JSON does; a browser, or a client asking for
// nothing in particular, does not.
func PrefersJSON(r *http.Request) bool {
	html, json := acceptWeights(r)
	return json > 0 && json > html
}

// acceptWeights are the weights the request's Accept gives HTML and JSON,
// -1 for a type it does not name.
func acceptWeights(r *http.Request) (html, json float64) {
	html, json = -1.0, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch mt {
		case "text/html", "application/xhtml+xml":
			html = max(html, q)
		case "application/json":
			json = max(json, q)
		}
	}
	return html, json
}

// AnswerPage is what the answer page shows.
type AnswerPage struct {
	tasks.AnswerView
	// Error is why the last answer was refused (shown above the form).
	Error string
}

// Title names the task the request belongs to, as well as the page can.
func (p AnswerPage) Title() string {
	switch {
	case p.TaskLabel != "":
		return p.TaskLabel
	case p.TaskKind != "":
		return p.TaskKind
	}
	return "A task"
}

// Fine is the page's last line.
func (AnswerPage) Fine() string { return answerFine }

// AnswerLabel is the answer recorded, as a person reads it: the label of the
// option chosen (its id when the option is not known), or nothing.
func (p AnswerPage) AnswerLabel() string {
	if p.Answer == nil {
		return ""
	}
	switch p.Answer.Action {
	case wire.ActionDecline:
		return "Declined"
	case wire.ActionCancel:
		return "Dismissed"
	}
	if p.Answer.OptionID == "" {
		return ""
	}
	for _, o := range p.Options {
		if o.ID == p.Answer.OptionID {
			return o.Label
		}
	}
	return p.Answer.OptionID
}

// channelNames name the channels an answer comes through, as the page's
// reader knows them.
var channelNames = map[string]string{
	wire.ViaAPI: "the API", wire.ViaConsole: "the console", wire.ViaAnswerLink: "an answer link",
	wire.ViaSlack: "Slack", wire.ViaMCP: "an MCP client", wire.ViaA2A: "an A2A client",
}

// AnsweredHow says when the answer was given and through what (never by
// whom: see tasks.ShownAnswer), or nothing for an answer recorded without.
func (p AnswerPage) AnsweredHow() string {
	if p.Answer == nil || p.Answer.Via == "" || p.Answer.AnsweredAt.IsZero() {
		return ""
	}
	via, ok := channelNames[p.Answer.Via]
	if !ok {
		via = p.Answer.Via
	}
	return "Answered through " + via + " at " + p.Answer.AnsweredAt.UTC().Format("2006-01-02 15:04 UTC") + "."
}

// RenderAnswer writes the answer page of a request, with status.
func RenderAnswer(w http.ResponseWriter, log *slog.Logger, status int, page AnswerPage) {
	render(w, log, status, "answer.html", page)
}

// Problem is what an error page says.
type Problem struct {
	Title   string
	Message string
	// Fine is the page's last line: what it is about.
	Fine string
}

// Problems are the error pages of one kind of link, by HTTP status.
type Problems struct {
	byStatus map[int]Problem
	fine     string
}

// AnswerProblems are the error pages of an answer URL.
var AnswerProblems = Problems{fine: answerFine, byStatus: map[int]Problem{
	http.StatusBadRequest: {Title: "Answer not taken", Message: "The answer could not be read. Go back and try again."},
	http.StatusNotFound: {Title: "Link not found", Message: "This answer link is not known. It may have been mistyped, " +
		"or its task has expired."},
	http.StatusGone: {Title: "Question closed", Message: "This question is no longer open: its task has ended or expired."},
	http.StatusServiceUnavailable: {Title: "Try again shortly", Message: "The service cannot answer right now. " +
		"Reload the page in a moment."},
	http.StatusTooManyRequests: {Title: "Too many requests", Message: "Wait a moment, then reload the page."},
	http.StatusRequestEntityTooLarge: {Title: "Answer too long", Message: "The answer is longer than the service takes. " +
		"Go back and shorten it."},
}}

// answerFine ends every page of an answer URL.
const answerFine = "this page shows one question and nothing else of its task."

// RenderProblem writes the error page of set for status.
func RenderProblem(w http.ResponseWriter, log *slog.Logger, status int, set Problems) {
	p, ok := set.byStatus[status]
	if !ok {
		p = Problem{Title: "Something went wrong", Message: "The service could not show this page. Reload it in a moment."}
	}
	p.Fine = set.fine
	render(w, log, status, "problem.html", p)
}

func render(w http.ResponseWriter, log *slog.Logger, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		log.Error("render page", "page", name, "err", err)
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString("<!doctype html><title>Error</title><p>The page could not be shown.</p>")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// optionClass is the button class of an option's style.
func optionClass(style string) string {
	switch style {
	case "primary", "danger":
		return "btn btn-" + style
	}
	return "btn"
}
