package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/taskhook/taskhook/problem"
)

// draft2020 is the only $schema a tool's schema may name (it may name none).
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// schemaURL is the name a schema is compiled under: it is never fetched.
const schemaURL = "urn:taskhook:tool-schema"

// maxDetails bounds the fields one refusal of a call's arguments names.
const maxDetails = 20

var english = message.NewPrinter(language.English)

// compileSchema compiles a tool's schema (field names it in errors) under
// draft 2020-12. A $ref that leaves the schema loads nothing: no file, no
// URL, so publishing a schema reads nothing off this machine or the net.
func compileSchema(raw []byte, field string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, problem.Invalid(field, "is not JSON")
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, problem.Invalid(field, "must be a JSON Schema object")
	}
	if v, ok := obj["$schema"]; ok && v != draft2020 && v != draft2020+"#" {
		return nil, problem.Invalid(field+".$schema", "must be %s, or left out", draft2020)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, problem.Invalid(field, "is not a JSON Schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		var verr *jsonschema.SchemaValidationError
		if errors.As(err, &verr) {
			if ve, ok := verr.Err.(*jsonschema.ValidationError); ok {
				if d := details(ve, doc, field); len(d) > 0 {
					return nil, problem.Invalid(d[0].Field, "is not valid JSON Schema (draft 2020-12): %s", d[0].Message)
				}
			}
		}
		return nil, problem.Invalid(field, "is not a JSON Schema this server can use: %s", schemaError(err))
	}
	return sch, nil
}

// schemaError is a compile error's text without the schema's internal name.
func schemaError(err error) string {
	return string(bytes.ReplaceAll([]byte(err.Error()), []byte(schemaURL), []byte("the schema")))
}

// validateArguments checks a call's arguments (a JSON object) against the
// tool's compiled input schema: nil, or a ValidationError naming each field
// at fault ("arguments.city"), at most maxDetails of them.
func validateArguments(sch *jsonschema.Schema, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return problem.Invalid("arguments", "is not JSON")
	}
	if _, ok := inst.(map[string]any); !ok {
		return problem.Invalid("arguments", "must be an object")
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("validate arguments: %w", err)
	}
	d := details(ve, inst, "arguments")
	if len(d) == 0 {
		return problem.Invalid("arguments", "do not fit the tool's inputSchema")
	}
	first := d[0]
	first.More = d[1:]
	return &first
}

// details are the leaves of a validation error as field problems under
// root, each field a path into the instance (root.items[0].name). A missing
// required member and a member not allowed are named as the member itself.
func details(ve *jsonschema.ValidationError, inst any, root string) []problem.ValidationError {
	var out []problem.ValidationError
	seen := map[string]bool{}
	add := func(field, msg string) {
		if len(out) < maxDetails && !seen[field+"\x00"+msg] {
			seen[field+"\x00"+msg] = true
			out = append(out, problem.ValidationError{Field: field, Message: msg})
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := path(root, inst, e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, m := range k.Missing {
				add(at+member(m), "is required")
			}
		case *kind.AdditionalProperties:
			for _, m := range k.Properties {
				add(at+member(m), "is not allowed")
			}
		default:
			add(at, e.ErrorKind.LocalizedString(english))
		}
	}
	walk(ve)
	return out
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// path writes an instance location under root: [i] for an array's item,
// .name for an object's member (["odd name"] when it is not a plain name).
func path(root string, inst any, loc []string) string {
	p := root
	v := inst
	for _, tok := range loc {
		switch cur := v.(type) {
		case []any:
			p += "[" + tok + "]"
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
		case map[string]any:
			p += member(tok)
			v = cur[tok]
		default:
			p += member(tok)
			v = nil
		}
	}
	return p
}

// member is how a path names an object's member.
func member(name string) string {
	if plainName.MatchString(name) {
		return "." + name
	}
	b, _ := json.Marshal(name)
	return "[" + string(b) + "]"
}
