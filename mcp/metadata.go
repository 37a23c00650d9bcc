package mcp

import (
	"net/http"
	"strings"
)

// MetadataPath is where the OAuth 2.0 protected resource metadata (RFC 9728)
// of the MCP endpoint is served; a 401 from the endpoint points to it. The
// same document is served at MetadataPath + Path, where RFC 9728 puts the
// metadata of a resource with a path.
const MetadataPath = "/.well-known/oauth-protected-resource"

// MetadataHandler serves the protected resource metadata of the MCP
// endpoint under publicURL: the resource, the authorization servers that
// issue its tokens (none when tokens are made out of band, as with a shared
// secret), and that the token goes in the Authorization header. It answers
// GET and HEAD, to anybody: the document is public.
func MetadataHandler(publicURL string, authorizationServers []string) http.Handler {
	doc := map[string]any{
		"resource":                 strings.TrimSuffix(publicURL, "/") + Path,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "taskhook",
	}
	if len(authorizationServers) > 0 {
		doc["authorization_servers"] = authorizationServers
	}
	body := marshal(doc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
