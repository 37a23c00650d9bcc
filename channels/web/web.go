// Package web is where people answer in a browser: the answer page behind
// each request's answerUrl, and the web console at /console/. Both are plain
// HTML, CSS and JavaScript embedded in the binary, served under a strict
// Content-Security-Policy: no inline script or style, nothing from another
// origin.
//
// It imports tasks (for the view of a request) and api/wire; handlers wires
// its pages to routes.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// Security policies. The answer page needs its stylesheet and its own form
// posts; the console also calls the API (connect-src) from its script.
const (
	answerPagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; form-action 'self'; " +
		"frame-ancestors 'none'; base-uri 'none'"
	consolePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// SetAnswerPageHeaders sets what every answer of an answer URL carries, HTML
// or JSON: never cached, never sent on as a referrer (the URL is the
// credential), never framed or sniffed. The pages of a provider sign-in
// (the callback, whose URL holds the attempt, and the page it lands on)
// carry the same.
func SetAnswerPageHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", answerPagePolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept")
}

// setConsoleHeaders sets the console's policy on one of its files.
func setConsoleHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", consolePolicy)
	h.Set("X-Content-Type-Options", "nosniff")
}

//go:embed static
var static embed.FS

// files is the console's directory: index.html, its script and the
// stylesheet the answer pages share.
var files, _ = fs.Sub(static, "static") // the directory is embedded: cannot fail

// StylesheetPath is where the stylesheet of the console and the answer
// pages is served.
const StylesheetPath = ConsolePath + "taskhook.css"
