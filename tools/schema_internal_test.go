package tools

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/problem"
)

const weatherSchema = `{"type":"object","properties":{
  "city":{"type":"string"},
  "days":{"type":"array","items":{"type":"integer"}},
  "odd key":{"type":"boolean"}},
 "required":["city","units"],"additionalProperties":false}`

// Arguments outside the schema are refused with a detail per field, each
// named as a path under "arguments".
func TestArgumentsNameEachField(t *testing.T) {
	sch, err := compileSchema([]byte(weatherSchema), "inputSchema")
	if err != nil {
		t.Fatal(err)
	}
	if err := validateArguments(sch, []byte(`{"city":"Oslo","units":"C"}`)); err == nil || !strings.Contains(err.Error(), "units") {
		t.Fatalf("units is not allowed by additionalProperties: %v", err)
	}
	err = validateArguments(sch, []byte(`{"city":3,"days":[1,"x"],"odd key":"no","extra":true}`))
	var verr *problem.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a ValidationError, got %v", err)
	}
	var fields []string
	for _, d := range append([]problem.ValidationError{*verr}, verr.More...) {
		fields = append(fields, d.Field)
		if d.Message == "" {
			t.Errorf("%s has no message", d.Field)
		}
	}
	slices.Sort(fields)
	want := []string{"arguments.city", "arguments.days[1]", "arguments.extra", `arguments["odd key"]`, "arguments.units"}
	slices.Sort(want)
	if !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q", fields, want)
	}
	if err := validateArguments(sch, []byte(`[1]`)); err == nil || !strings.HasPrefix(err.Error(), "arguments:") {
		t.Fatalf("arguments that are not an object: %v", err)
	}
}

// A schema is draft 2020-12, reads nothing from outside itself, and must
// describe an object when it is an input schema.
func TestSchemasRefused(t *testing.T) {
	for _, c := range []struct{ schema, field string }{
		{`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "inputSchema"},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "inputSchema"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, "inputSchema.$schema"},
		{`{"type":"nope"}`, "inputSchema"},
		{`{"type":"string"}`, "inputSchema.type"},
		{`[]`, "inputSchema"},
		{`{}`, "inputSchema.type"},
	} {
		err := checkSchema([]byte(c.schema), "inputSchema", true)
		var verr *problem.ValidationError
		if !errors.As(err, &verr) || !strings.HasPrefix(verr.Field, c.field) {
			t.Errorf("%s: %v, want a refusal of %s", c.schema, err, c.field)
		}
	}
	if err := checkSchema([]byte(`{"type":"object","$defs":{"d":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/d"}}}`), "inputSchema", true); err != nil {
		t.Errorf("a $ref inside the schema: %v", err)
	}
}
