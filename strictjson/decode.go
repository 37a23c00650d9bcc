// Package strictjson validates and decodes request JSON under the
// contract's strict rules, which encoding/json alone does not keep: member
// names match a field exactly (case included, so a duplicate in another
// case cannot override a field), text is valid UTF-8 with no unpaired
// surrogate escape, objects and arrays nest at most MaxDepth levels, and a
// body is exactly one JSON object. Every face decodes its request bodies
// through Decode.
//
// A body that is not JSON is a *SyntaxError; any other refusal is a
// *problem.ValidationError naming the field at fault, for the face to answer
// in its own error shape. It imports problem and the standard library only:
// never store, a service or a face.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
)

// SyntaxError is a body that is not one well-formed JSON value.
type SyntaxError struct {
	Message string // says what is wrong, never quoting the body
}

func (e *SyntaxError) Error() string { return e.Message }

var (
	errNotJSON  = &SyntaxError{Message: "the body is not valid JSON"}
	errTrailing = &SyntaxError{Message: "the body holds more than one JSON value"}
)

// Decode decodes one JSON object strictly: unknown fields (names match
// exactly, case included), invalid UTF-8, unpaired surrogate escapes, nesting
// deeper than MaxDepth, trailing data and type mismatches are refused
// with the field at fault. An empty body reads as {} (every route whose body
// is all optional accepts none).
func Decode(body []byte, dst any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return errNotJSON
		}
		return invalid("body", "must be a JSON object")
	}
	if err := check(trimmed, shapeOf(reflect.TypeOf(dst))); err != nil {
		return err
	}
	// check has seen exactly one well-formed object whose member names
	// are all fields: what decoding can still refuse is a type mismatch.
	// (json.Unmarshal decodes the bytes in place, where a Decoder copied
	// them into a buffer of its own first.)
	if err := json.Unmarshal(trimmed, dst); err != nil {
		var syntax *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
			return errNotJSON
		case errors.As(err, &typeErr):
			field, msg, _ := Mismatch(err, "body")
			return invalid(field, msg)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid(field, "is not a known field")
		default:
			return invalid("body", "could not be decoded")
		}
	}
	return nil
}

// Mismatch reports whether err is encoding/json's refusal of a value of the
// wrong type and, if it is, the field at fault (whole where the value itself
// is) and what that field must be ("must be a string"). A face decoding JSON
// more leniently than Decode names type mismatches the same way through it.
func Mismatch(err error, whole string) (field, msg string, ok bool) {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return "", "", false
	}
	field = typeErr.Field
	if field == "" {
		field = whole
	}
	return field, "must be " + jsonKind(typeErr.Type.Kind().String()), true
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "of another type"
}
