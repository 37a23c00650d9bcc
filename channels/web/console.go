package web

import (
	"net/http"
)

// ConsolePath is where the console is served.
const ConsolePath = "/console/"

// Console serves the console's files under ConsolePath: the page, its
// script and stylesheet. The page holds no data: its script calls the API
// with the bearer token the person signs in with, kept in the tab's
// sessionStorage and never in a URL.
func Console() http.Handler {
	files := http.StripPrefix(ConsolePath, http.FileServerFS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setConsoleHeaders(w.Header())
		files.ServeHTTP(w, r)
	})
}
