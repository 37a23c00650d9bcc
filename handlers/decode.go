package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/strictjson"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/tasks"
)

// readBody reads the whole body under the size limit, the body deadline and
// the server's budget of body bytes (see bodylimit).
func (a *api) readBody(r *http.Request) ([]byte, error) { return a.body.Read(r) }

// idempotency reads Idempotency-Key and scopes it to the principal and the
// request path.
func idempotency(r *http.Request, p authz.Principal, body []byte) (idem.Key, error) {
	scope, err := idempotencyScope(r, p)
	if err != nil {
		return idem.Key{}, err
	}
	return idem.KeyFor(scope, body), nil
}

// idempotencyScope is the scope of the request's Idempotency-Key, known
// before its body is read; "" without a key.
func idempotencyScope(r *http.Request, p authz.Principal) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return "", nil
	}
	if len(key) > 255 {
		return "", invalidRequest("Idempotency-Key", "must be 1 to 255 printable characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", invalidRequest("Idempotency-Key", "must be 1 to 255 printable characters")
		}
	}
	return p.ID + "\n" + r.Method + " " + r.URL.Path + "\n" + key, nil
}

// parseWait reads ?wait= as a Go duration or seconds; above the maximum it
// is cut to the maximum.
func parseWait(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || secs != secs {
			return 0, invalidRequest("wait", "must be a duration such as 30s, or seconds")
		}
		// Cut before converting: a huge number of seconds overflows a Duration.
		d = time.Duration(min(secs, tasks.MaxWait.Seconds()) * float64(time.Second))
	}
	if d < 0 {
		return 0, invalidRequest("wait", "must not be negative")
	}
	return min(d, tasks.MaxWait), nil
}

// parseLimit reads ?limit= (1..max, default def).
func parseLimit(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, invalidRequest("limit", fmt.Sprintf("must be 1 to %d", max))
	}
	return n, nil
}

// readPost reads a POST: its body under the size limit, the principal and the
// idempotency key scoped to both. On failure it has answered and ok is false.
func (a *api) readPost(w http.ResponseWriter, r *http.Request) (body []byte, p authz.Principal, key idem.Key, ok bool) {
	body, err := a.readBody(r)
	if err == nil {
		p = principal(r)
		key, err = idempotency(r, p, body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return nil, p, key, false
	}
	return body, p, key, true
}

// decodePost is readPost with the body decoded strictly into dst.
func (a *api) decodePost(w http.ResponseWriter, r *http.Request, dst any) (authz.Principal, idem.Key, bool) {
	body, p, key, ok := a.readPost(w, r)
	if !ok {
		return p, key, false
	}
	if err := strictjson.Decode(body, dst); err != nil {
		a.writeError(w, r, err)
		return p, key, false
	}
	return p, key, true
}

// writeReplayable writes a write's answer, marked when it is the stored
// answer of an earlier request with the same idempotency key.
func writeReplayable(w http.ResponseWriter, status int, raw []byte, replayed bool) {
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, status, raw)
}

// setLocation points Location at the record a create answered with: base
// and the string the reply's top-level member named member holds. A reply
// that opens with that member, as a task's and a hook's do, is read no
// further than its value.
func setLocation(w http.ResponseWriter, base string, raw []byte, member string) {
	if id := leadingString(raw, member); id != "" {
		w.Header().Set("Location", base+id)
		return
	}
	var v map[string]json.RawMessage
	var id string
	if json.Unmarshal(raw, &v) == nil && json.Unmarshal(v[member], &id) == nil && id != "" {
		w.Header().Set("Location", base+id)
	}
}

// leadingString is the value of the object raw's first member when that
// member is named member and holds a string with no escapes in it; "" when
// it is not so.
func leadingString(raw []byte, member string) string {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"`+member+`":"`))
	if !ok {
		return ""
	}
	end := bytes.IndexAny(rest, `"\`)
	if end < 0 || rest[end] != '"' {
		return ""
	}
	return string(rest[:end])
}
