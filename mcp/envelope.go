package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/taskhook/taskhook/strictjson"
)

// messageKind is what a JSON-RPC message is.
type messageKind int

const (
	kindRequest      messageKind = iota + 1 // a method with an id: it gets a response
	kindNotification                        // a method without an id
	kindResponse                            // a result or an error, answering a request of ours
)

// message is one JSON-RPC 2.0 message as a client posts it.
type message struct {
	kind   messageKind
	id     json.RawMessage // a string or an integer, as sent; nil for a notification
	method string
	params json.RawMessage // an object, or nil
	result json.RawMessage // of a response
	error  json.RawMessage // of an error response
}

// envelopeMembers are the members a message may have; any other is refused.
var envelopeMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// parseMessage reads one JSON-RPC message strictly: malformed JSON (invalid
// UTF-8 included) is a parse error; a batch, a member twice, an unknown
// member, a wrong version, an id that is neither a string nor an integer, or
// a shape that is neither a request, a notification nor a response is an
// invalid request. Params that are not an object are invalid params, with
// the id known.
func parseMessage(body []byte) (message, *rpcError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || !utf8.Valid(trimmed) || !json.Valid(trimmed) {
		return message{}, errParse()
	}
	switch trimmed[0] {
	case '{':
	case '[':
		return message{}, errInvalidRequest("batches are not supported: send one message per request")
	default:
		return message{}, errInvalidRequest("a message is a JSON object")
	}
	members := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return message{}, errParse()
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return message{}, errParse()
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return message{}, errParse()
		}
		if _, dup := members[name]; dup {
			return message{}, errInvalidRequest("member " + strconv.Quote(name) + " appears twice")
		}
		if !envelopeMembers[name] {
			return message{}, errInvalidRequest("unknown member " + strconv.Quote(name))
		}
		members[name] = v
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return message{}, errParse()
	}
	var version string
	if json.Unmarshal(members["jsonrpc"], &version) != nil || version != "2.0" {
		return message{}, errInvalidRequest(`"jsonrpc" must be "2.0"`)
	}
	var m message
	rawID, hasID := members["id"]
	if hasID {
		if !validID(rawID) {
			return message{}, errInvalidRequest(`"id" must be a string or an integer`)
		}
		m.id = rawID
	}
	rawMethod, hasMethod := members["method"]
	_, hasResult := members["result"]
	_, hasError := members["error"]
	switch {
	case hasMethod:
		if hasResult || hasError {
			return message{}, errInvalidRequest("a request has no result or error")
		}
		if json.Unmarshal(rawMethod, &m.method) != nil || m.method == "" {
			return message{}, errInvalidRequest(`"method" must be a non-empty string`)
		}
		m.kind = kindNotification
		if hasID {
			m.kind = kindRequest
		}
		if p, ok := members["params"]; ok && !bytes.Equal(p, []byte("null")) {
			if p[0] != '{' {
				return m, errInvalidParams("params", "must be an object")
			}
			m.params = p
		}
	case hasResult != hasError && hasID:
		if _, ok := members["params"]; ok {
			return message{}, errInvalidRequest("a response has no params")
		}
		m.kind, m.result, m.error = kindResponse, members["result"], members["error"]
	default:
		return message{}, errInvalidRequest("a message is a request (method, id), a notification (method) or a response (id, result or error)")
	}
	return m, nil
}

// validID reports whether raw is a request id: a string, or an integer
// that fits int64 (null, fractions, exponents and other types are not).
func validID(raw json.RawMessage) bool {
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// decodeParams decodes a request's params into dst: members dst does not
// name are left alone (extensions may add any), a member of the wrong type
// is invalid params naming it. No params read as {}.
func decodeParams(params json.RawMessage, dst any) *rpcError {
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, dst); err != nil {
		if field, msg, ok := strictjson.Mismatch(err, "params"); ok {
			return errInvalidParams(field, msg)
		}
		return errInvalidParams("params", "could not be read")
	}
	return nil
}
