package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/authz"
)

// Path is where the MCP endpoint is served.
const Path = "/mcp"

// Protocol versions. The stateless generation is served to requests that
// carry their version in _meta; the others begin with initialize.
const (
	versionModern = "2026-07-28"
	versionTasks  = "2025-11-25" // the first with tasks
)

// supportedVersions is every version served, newest first.
var supportedVersions = []string{versionModern, versionTasks, "2025-06-18", "2025-03-26"}

// legacyVersions are the versions that begin with initialize.
var legacyVersions = map[string]bool{versionTasks: true, "2025-06-18": true, "2025-03-26": true}

// Request headers of the Streamable HTTP transport.
const (
	headerVersion = "MCP-Protocol-Version"
	headerMethod  = "Mcp-Method"
	headerName    = "Mcp-Name"
	headerSession = "Mcp-Session-Id"
)

// Config is the MCP endpoint's configuration. Backend, Authenticate and
// PublicURL are required; a zero value elsewhere means the default.
type Config struct {
	Backend Backend
	// Authenticate returns the caller of a request from its Authorization
	// header: an error is a 401.
	Authenticate func(*http.Request) (authz.Principal, error)
	// PublicURL is the server's public base URL (TASKHOOK_PUBLIC_URL): its
	// origin is allowed, and the resource metadata is served under it.
	PublicURL string
	// AllowedOrigins are further origins a browser client may post from
	// (TASKHOOK_MCP_ALLOWED_ORIGINS), as scheme://host[:port].
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body; default 1 MiB.
	MaxBodyBytes int64
	// ServerName and ServerVersion name the server to clients; default
	// "taskhook" and "dev".
	ServerName, ServerVersion string
	// Instructions, if set, tell a client's model how to use the server.
	Instructions string
	// Park, if set, holds waiting answers off the handler (see Parker).
	Park Parker
	// Draining is closed when the server begins to shut down: held answers
	// and listen streams end so the client retries elsewhere.
	Draining <-chan struct{}
	// Heartbeat is how often an idle stream gets an SSE comment; default
	// 15 seconds.
	Heartbeat time.Duration
	// Logger logs internal errors; default slog.Default().
	Logger *slog.Logger
	// Observe, if set, is told of each request: its method (one of the
	// methods served, or "other") and its outcome ("ok", or the JSON-RPC
	// error code, or the HTTP status of a request refused before it was
	// read). Both are bounded: fit for metric labels.
	Observe func(method, outcome string)
}

// handler serves the MCP endpoint.
type handler struct {
	cfg     Config
	origins map[string]bool
	// resourceMetadata is the URL of the RFC 9728 document, for 401s.
	resourceMetadata string
}

// New returns the handler of the MCP endpoint: POST only, one JSON-RPC
// message a request, both protocol generations.
func New(cfg Config) (http.Handler, error) {
	if cfg.Backend == nil || cfg.Authenticate == nil {
		return nil, errors.New("mcp: Backend and Authenticate are required")
	}
	public, err := url.Parse(cfg.PublicURL)
	if err != nil || public.Scheme == "" || public.Host == "" {
		return nil, fmt.Errorf("mcp: PublicURL %q is not an absolute URL", cfg.PublicURL)
	}
	h := &handler{cfg: cfg, origins: map[string]bool{originOf(public): true},
		resourceMetadata: strings.TrimSuffix(cfg.PublicURL, "/") + MetadataPath}
	for _, o := range cfg.AllowedOrigins {
		u, err := url.Parse(strings.TrimSpace(o))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("mcp: allowed origin %q is not scheme://host[:port]", o)
		}
		h.origins[originOf(u)] = true
	}
	if h.cfg.MaxBodyBytes == 0 {
		h.cfg.MaxBodyBytes = 1 << 20
	}
	if h.cfg.ServerName == "" {
		h.cfg.ServerName = "taskhook"
	}
	if h.cfg.ServerVersion == "" {
		h.cfg.ServerVersion = "dev"
	}
	if h.cfg.Heartbeat == 0 {
		h.cfg.Heartbeat = 15 * time.Second
	}
	if h.cfg.Logger == nil {
		h.cfg.Logger = slog.Default()
	}
	return h, nil
}

// originOf is u's origin, lower-cased, without a default port.
func originOf(u *url.URL) string {
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if (scheme == "https" && strings.HasSuffix(host, ":443")) || (scheme == "http" && strings.HasSuffix(host, ":80")) {
		host = host[:strings.LastIndexByte(host, ':')]
	}
	return scheme + "://" + host
}

// originAllowed reports whether a request may be served by its Origin: one
// without it (not from a browser), or one from an allowed origin. Anything
// else (a foreign page, "null") is refused, against DNS rebinding.
func (h *handler) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Scheme != "" && u.Host != "" && h.origins[originOf(u)]
}

func (h *handler) observe(method, outcome string) {
	if h.cfg.Observe != nil {
		h.cfg.Observe(method, outcome)
	}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.originAllowed(r) {
		h.refuse(w, http.StatusForbidden, errInvalidRequest("the Origin is not allowed"))
		return
	}
	if r.Method != http.MethodPost {
		// No stream to GET, no session to DELETE: every message is a POST.
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, http.StatusMethodNotAllowed, errInvalidRequest("the MCP endpoint takes POST only"))
		return
	}
	p, err := h.cfg.Authenticate(r)
	if err != nil {
		challenge := `Bearer resource_metadata="` + h.resourceMetadata + `"`
		if r.Header.Get("Authorization") != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		h.refuse(w, http.StatusUnauthorized, errInvalidRequest("a valid bearer token is required"))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			h.refuse(w, http.StatusUnsupportedMediaType, errInvalidRequest("the body must be application/json"))
			return
		}
	}
	canStream, ok := accepts(r.Header.Get("Accept"))
	if !ok {
		h.refuse(w, http.StatusNotAcceptable, errInvalidRequest("Accept must allow application/json or text/event-stream"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.refuse(w, http.StatusRequestEntityTooLarge, errInvalidRequest("the body is above "+strconv.FormatInt(h.cfg.MaxBodyBytes, 10)+" bytes"))
			return
		}
		h.refuse(w, http.StatusBadRequest, errInvalidRequest("the body could not be read"))
		return
	}
	m, perr := parseMessage(body)
	req := &request{h: h, w: w, r: r, p: p, m: m, canStream: canStream, label: methodLabel(m.method)}
	if perr != nil {
		req.fail(perr)
		return
	}
	h.serve(req)
}

// refuse answers a request refused before its message was read: the
// status, and a JSON-RPC error without an id.
func (h *handler) refuse(w http.ResponseWriter, status int, e *rpcError) {
	h.observe("other", strconv.Itoa(status))
	e.status = status
	writeJSON(w, e.status, e.retryAfter, response{JSONRPC: "2.0", Error: e.wireError()})
}

// accepts reads Accept: whether the answer may be an SSE stream, and
// whether any answer is acceptable. No Accept takes anything.
func accepts(accept string) (stream, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	var jsonOK bool
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*":
			jsonOK, stream = true, true
		case "application/*", "application/json":
			jsonOK = true
		case "text/*", "text/event-stream":
			stream = true
		}
	}
	return stream, jsonOK || stream
}

// methodLabel is method as a metric label: the methods served, or "other".
func methodLabel(method string) string {
	switch method {
	case "initialize", "ping", "server/discover", "tools/list", "tools/call", "tasks/get", "tasks/list",
		"tasks/update", "tasks/cancel", "tasks/result", "subscriptions/listen":
		return method
	}
	if strings.HasPrefix(method, "notifications/") {
		return "notification"
	}
	if method == "" {
		return "response"
	}
	return "other"
}

// response is a JSON-RPC response (or, without an id, an error about a
// message whose id could not be read).
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

// notification is a JSON-RPC notification, or, with an id, a request this
// server sends a client on a stream.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// marshal encodes v as JSON with &, < and > as they are: answers are
// application/json or SSE data, never HTML, and URLs read better plain.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"internal error"}}`)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func writeJSON(w http.ResponseWriter, status int, retryAfter string, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_, _ = w.Write(marshal(v))
}
