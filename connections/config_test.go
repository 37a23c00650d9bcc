package connections

import (
	"strings"
	"testing"
)

func TestParseConnections(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GH_SECRET": "s3cret"}
	getenv := func(k string) string { return env[k] }
	good := `[{"name":"github","authorizeUrl":"https://github.com/login/oauth/authorize",
	  "tokenUrl":"https://github.com/login/oauth/access_token","clientId":"id","clientSecretEnv":"GH_SECRET",
	  "scopes":["repo"],"pkce":true}]`
	conns, err := Parse([]byte(good), getenv)
	if err != nil || len(conns) != 1 || conns[0].ClientSecret != "s3cret" || conns[0].Return != ReturnInPath {
		t.Fatalf("Parse = %+v, %v", conns, err)
	}
	for name, c := range map[string]struct{ file, want string }{
		"not an array":    {`{}`, "not a JSON array"},
		"unknown field":   {`[{"name":"a","colour":1}]`, "colour"},
		"bad name":        {`[{"name":"A B"}]`, "entry 0 (\"A B\"): name"},
		"duplicate name":  {`[` + strings.Trim(good, "[]") + `,` + strings.Trim(good, "[]") + `]`, "entry 1 (\"github\"): name"},
		"no token url":    {`[{"name":"a","authorizeUrl":"https://x/a","clientId":"c","clientSecret":"s"}]`, "entry 0 (\"a\"): tokenUrl"},
		"no client id":    {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientSecret":"s"}]`, "clientId"},
		"env not set":     {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecretEnv":"NOPE"}]`, "clientSecretEnv"},
		"both secrets":    {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecret":"s","clientSecretEnv":"GH_SECRET"}]`, "clientSecret"},
		"public, no pkce": {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c"}]`, "pkce"},
		"bad scope":       {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecret":"s","scopes":["a b"]}]`, "scopes[0]"},
		"reserved param":  {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecret":"s","extraAuthParams":{"state":"x"}}]`, "extraAuthParams.state"},
		"bad callback":    {`[{"name":"a","authorizeUrl":"https://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecret":"s","callback":"cookie"}]`, "callback"},
		"not an http url": {`[{"name":"a","authorizeUrl":"ftp://x/a","tokenUrl":"https://x/t","clientId":"c","clientSecret":"s"}]`, "authorizeUrl"},
	} {
		_, err := Parse([]byte(c.file), getenv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to name %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the secret", name)
		}
	}
}

// A file that is not JSON, or not the JSON of connections, is refused with
// the line and column where reading it stopped.
func TestParseNamesLineAndColumn(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "" }
	for name, c := range map[string]struct{ file, want string }{
		"a trailing comma": {"[\n  {\"name\": \"a\",\n   }\n]", "line 3, column 4: "},
		"a wrong type":     {"[\n  {\"name\": \"a\",\n   \"pkce\": \"yes\"}\n]", "line 3, column 16: "},
		"an unknown field": {"[\n  {\"name\": \"a\",\n\n   \"colour\": 1}\n]", "line 4, column 4: "},
		"cut short":        {"[\n  {\"name\": \"é\"", "line 2, column 15: "},
		"an object":        {"{\"name\": \"a\"}", "line 1, column 1: "},
	} {
		_, err := Parse([]byte(c.file), getenv)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not a JSON array of connections") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
