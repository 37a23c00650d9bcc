package hooks

import (
	"mime"
	"strings"

	"github.com/taskhook/taskhook/problem"
)

// A hook's static response is sent from the service's own origin to whoever
// posts to the ingest URL, and a browser can be made to post there (a
// cross-site form that submits itself) and show the answer as a page of that
// origin. So the response may only be of a type a browser shows as data and
// never runs: an allowlist, since the types that can carry script (HTML,
// XHTML, SVG, XML, JavaScript, multipart and whatever a browser learns next)
// are too many to list. The ingest route also sends every answer under a
// sandboxing Content-Security-Policy and nosniff, so a type let through here
// still runs nothing.

// responseCharset is the one charset a response may name: its body is a
// JSON string, so UTF-8.
const responseCharset = "utf-8"

// passiveContentType reports whether a media type (lower case, without
// parameters) is one a browser never runs: JSON, a JSON-based type, or
// plain text.
func passiveContentType(mt string) bool {
	switch mt {
	case "application/json", "text/plain":
		return true
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && strings.HasSuffix(sub, "+json") && len(sub) > len("+json")
}

// responseContentType checks a configured response content type and returns
// it as it is stored and sent: the media type in lower case and, when one
// was given, charset=utf-8. Sending the parsed form rather than the given
// string leaves a browser nothing to read differently from this check.
func responseContentType(ct string) (string, error) {
	if len(ct) > maxContentType || strings.ContainsAny(ct, "\r\n") {
		return "", problem.Invalid("response.contentType", "is not a media type")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if typ, sub, ok := strings.Cut(mt, "/"); err != nil || !ok || typ == "" || sub == "" {
		return "", problem.Invalid("response.contentType", "is not a media type")
	}
	if !passiveContentType(mt) {
		return "", problem.Invalid("response.contentType",
			"must be application/json, an application/*+json type or text/plain: a type a browser may run (HTML, XML, SVG, script) is refused")
	}
	charset, named := params["charset"]
	if len(params) > 1 || (len(params) == 1 && !named) || (named && !strings.EqualFold(charset, responseCharset)) {
		return "", problem.Invalid("response.contentType", "takes no parameter but charset=utf-8")
	}
	if named {
		return mime.FormatMediaType(mt, map[string]string{"charset": responseCharset}), nil
	}
	return mt, nil
}

// servable is the response the ingest route sends for a stored one: a
// response stored before active types were refused goes out as plain text.
func servable(r *Response) *Response {
	if r == nil {
		return nil
	}
	if _, err := responseContentType(r.ContentType); err == nil {
		return r
	}
	safe := *r
	safe.ContentType = defaultResponse
	return &safe
}
