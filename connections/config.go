// Package connections is provider sign-in for executors: the OAuth 2.0
// connections a deployment configures, the sign-in attempt a task's
// authorization request carries, the connection callback the provider
// redirects to, and the tokens kept sealed in the vault under (requester,
// connection).
//
// It imports tasks, store, idem, authz, ids, tokens, problem, metrics and
// api/wire.
package connections

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Return forms: where the provider's redirect (the sign-in return) carries the attempt.
const (
	// ReturnInPath puts the attempt token in the redirect URI's path
	// (/v1/connections/{name}/callback/{token}).
	ReturnInPath = "path"
	// ReturnInState keeps one redirect URI (/v1/connections/{name}/callback)
	// and finds the attempt by state, for providers that allow one exact URI.
	ReturnInState = "state"
)

// Connection is one OAuth 2.0 provider the service signs people into.
type Connection struct {
	Name            string            `json:"name"`
	AuthorizeURL    string            `json:"authorizeUrl"`
	TokenURL        string            `json:"tokenUrl"`
	ClientID        string            `json:"clientId"`
	ClientSecret    string            `json:"clientSecret,omitempty"`
	ClientSecretEnv string            `json:"clientSecretEnv,omitempty"`
	Scopes          []string          `json:"scopes"`
	PKCE            bool              `json:"pkce"`
	ExtraAuthParams map[string]string `json:"extraAuthParams,omitempty"`
	Return          string            `json:"callback,omitempty"` // path (default) or state
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// reservedParams are what the service sets on an authorize URL itself.
var reservedParams = map[string]bool{
	"client_id": true, "redirect_uri": true, "state": true, "scope": true, "response_type": true,
	"code_challenge": true, "code_challenge_method": true,
}

// LoadFile reads TASKHOOK_CONNECTIONS_FILE: a JSON array of connections.
// getenv resolves clientSecretEnv. The error names the entry and the field.
func LoadFile(path string, getenv func(string) string) ([]Connection, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("connections file: %w", err)
	}
	return Parse(raw, getenv)
}

// Parse reads and checks a connections file's content.
func Parse(raw []byte, getenv func(string) string) ([]Connection, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var conns []Connection
	if err := dec.Decode(&conns); err != nil {
		line, col := position(raw, errorOffset(raw, err))
		return nil, fmt.Errorf("connections file: line %d, column %d: not a JSON array of connections: %w", line, col, err)
	}
	seen := map[string]bool{}
	for i := range conns {
		c := &conns[i]
		entry := fmt.Sprintf("connections file: entry %d", i)
		if c.Name != "" {
			entry += fmt.Sprintf(" (%q)", c.Name)
		}
		bad := func(field, msg string) error { return fmt.Errorf("%s: %s: %s", entry, field, msg) }
		switch {
		case !namePattern.MatchString(c.Name):
			return nil, bad("name", "must be 1 to 64 of a-z 0-9 _ -, starting with a letter or digit")
		case seen[c.Name]:
			return nil, bad("name", "is used by an earlier entry")
		case !httpURL(c.AuthorizeURL):
			return nil, bad("authorizeUrl", "must be an http(s) URL")
		case !httpURL(c.TokenURL):
			return nil, bad("tokenUrl", "must be an http(s) URL")
		case c.ClientID == "":
			return nil, bad("clientId", "is required")
		case c.ClientSecret != "" && c.ClientSecretEnv != "":
			return nil, bad("clientSecret", "give clientSecret or clientSecretEnv, not both")
		}
		seen[c.Name] = true
		if c.ClientSecretEnv != "" {
			if c.ClientSecret = getenv(c.ClientSecretEnv); c.ClientSecret == "" {
				return nil, bad("clientSecretEnv", fmt.Sprintf("the variable %s is not set", c.ClientSecretEnv))
			}
		}
		if c.ClientSecret == "" && !c.PKCE {
			return nil, bad("clientSecret", "a connection without a client secret must use pkce")
		}
		for j, s := range c.Scopes {
			if !validScope(s) {
				return nil, bad(fmt.Sprintf("scopes[%d]", j), "must be printable, with no space or quote")
			}
		}
		for k := range c.ExtraAuthParams {
			if reservedParams[k] {
				return nil, bad("extraAuthParams."+k, "is set by the service")
			}
		}
		switch c.Return {
		case "":
			c.Return = ReturnInPath
		case ReturnInPath, ReturnInState:
		default:
			return nil, bad("callback", `must be "path" or "state"`)
		}
	}
	return conns, nil
}

// errorOffset is where in raw the decoder stopped at err: the byte it could
// not take, the end of a value of the wrong type, or an unknown field's name (the
// decoder gives no offset for those; the first key of that name is the one
// it refused first).
func errorOffset(raw []byte, err error) int {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return int(syntax.Offset) - 1
	case errors.As(err, &typ):
		return int(typ.Offset) - 1
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		key := regexp.MustCompile(regexp.QuoteMeta(field) + `\s*:`)
		if loc := key.FindIndex(raw); loc != nil {
			return loc[0]
		}
	}
	return len(raw) // cut short
}

// position is the line and column (from 1, in characters) of raw's byte at
// offset.
func position(raw []byte, offset int) (line, col int) {
	offset = max(0, min(offset, len(raw)))
	before := raw[:offset]
	start := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[start:]) + 1
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// validScope is RFC 6749's scope-token: printable ASCII but space, quote
// and backslash.
func validScope(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
