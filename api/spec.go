// Package api holds the HTTP contract of taskhook: the OpenAPI 3.1 document
// the server is tested against.
package api

import _ "embed"

// Spec is api/openapi.yaml, the OpenAPI 3.1 document of every route the
// server serves.
//
//go:embed openapi.yaml
var Spec []byte
