package store

import (
	"maps"
	"strings"
	"testing"
)

// A task record written as the scripts write it reads back field for
// field, whatever bytes its values hold, and a read of its first bytes
// finds its head when the head ends there.
func TestRecordReadsAsWritten(t *testing.T) {
	fields := map[string]string{
		"rev": "7", "status": "input_required", "owner": `al"ice`, "kind": "deploy \u00e9",
		"json":                     `{"taskId":"task_1","input":{"s":"a\\nb"}}`,
		taskFieldLog:               strings.Repeat("0001796534870378-0000000010", 3),
		taskFieldCommands:          "aaaaaaaaaaaaa ok 1-1\nbbbbbbbbbbbbb ok 2-2",
		taskFieldUndos:             "{\"-\":[\"statusMessage\"]}\n{\"status\":\"working\"}\n",
		recordFieldEndpoints:       `[{"endpointId":"ep_1"}]`,
		recordFieldSecret + "ep_1": "sealed:\x00\n\"",
		"slk:ep_2":                 "{\"ts\":\"1.2\"}\n",
	}
	rec := EncodeRecord(fields)
	got, err := DecodeRecord(rec)
	if err != nil || !maps.Equal(got, fields) {
		t.Fatalf("decoded %q (%v), want %q", got, err, fields)
	}
	names := []string{"json", "owner", taskFieldUndos, "requester", recordFieldEndpoints, taskFieldCommands, "slk:ep_2"}
	vals, err := recordValues(rec, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		want, ok := fields[n]
		if v, isString := vals[i].(string); isString != ok || v != want {
			t.Errorf("%s reads %#v, want %q (kept: %v)", n, vals[i], want, ok)
		}
	}
	head, ok := headValues(rec[:min(len(rec), recordHeadBytes)], []string{"owner", "status", "executor"})
	if !ok || head[0] != fields["owner"] || head[1] != fields["status"] || head[2] != nil {
		t.Errorf("the head read from the first bytes: %#v %v", head, ok)
	}
	fields["requester"] = strings.Repeat("r", recordHeadBytes)
	long := EncodeRecord(fields)
	if _, ok := headValues(long[:recordHeadBytes], []string{"owner"}); ok {
		t.Error("a head longer than what was read reads as whole")
	}
	empty := EncodeRecord(map[string]string{"json": "{}"})
	if got, err := DecodeRecord(empty); err != nil || len(got) != 1 || got["json"] != "{}" {
		t.Errorf("a record of a snapshot alone decodes to %q (%v)", got, err)
	}
}

func TestMalformedRecordsAreErrors(t *testing.T) {
	for _, rec := range []string{"", "{}", "{}\n{}\n{}", "{}\n{}\n{}\n3 x\nabc", "{}\n{}\n{}\n5 5\nabc", "[1]\n{}\n{}\n0 0\n", "{}\n{\"a\":1}\n{}\n0 0\n"} {
		if _, err := DecodeRecord(rec); err == nil {
			t.Errorf("DecodeRecord(%q): no error", rec)
		}
	}
	if got, err := DecodeRecord("[]\n[]\n{}\n0 0\n"); err != nil || len(got) != 1 {
		t.Errorf("empty objects written as arrays (the embedded store's cjson): %q %v", got, err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(EncodeRecord(map[string]string{"rev": "1", "json": "{}", taskFieldUndos: "{}\n"}))
	f.Add("{}\n{}\n{}\n1 2\nabc")
	f.Fuzz(func(t *testing.T, rec string) {
		fields, err := DecodeRecord(rec)
		if err != nil {
			return
		}
		again, err := DecodeRecord(EncodeRecord(fields))
		if err != nil || !maps.Equal(again, fields) {
			t.Fatalf("%q decodes to %q, which writes back as %q (%v)", rec, fields, again, err)
		}
	})
}
