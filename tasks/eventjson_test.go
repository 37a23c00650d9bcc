package tasks

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
)

// eventJSON is an event whole, as a read answers it but for its id:
// storedEvent's form with the snapshot (and the session with it) put back
// where it was cut, as a read puts them back.
func eventJSON(t Task, now time.Time, e Emitted, snapshot []byte) ([]byte, error) {
	ev, err := storedEvent(t, now, e)
	if err != nil || ev.Cut == 0 {
		return ev.JSON, err
	}
	return events.AppendJoined([]byte{'{'}, string(ev.JSON), ev.Cut, snapshot, false), nil
}

// eventJSONByMarshal is how events were rendered before storedEvent wrote
// them directly: the bytes a read answers must not change.
func eventJSONByMarshal(t Task, now time.Time, e Emitted, snapshot []byte) ([]byte, error) {
	data := make(map[string]any, len(e.Data))
	for k, v := range e.Data {
		data[k] = v
	}
	if isTaskEvent(e.Type) {
		data["task"] = json.RawMessage(snapshot)
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(events.Event{
		Type: e.Type, At: events.At(now), SessionID: t.SessionID, TaskID: t.TaskID,
		Revision: t.Revision, Data: d,
	})
}

// Every event a lifecycle emits, and odd ones, render byte for byte as
// json.Marshal renders them.
func TestEventJSONAsMarshal(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("x", 3600))
	task, emitted := askingTask(t)
	cases := []struct {
		task Task
		e    Emitted
	}{}
	for _, e := range emitted {
		cases = append(cases, struct {
			task Task
			e    Emitted
		}{task, e})
	}
	progress := "half <way> & \"more\" \u2028 é"
	for _, cmd := range []Command{
		{Kind: CmdProgress, StatusMessage: &progress, Progress: json.RawMessage(`{"done": 1}`)},
		{Kind: CmdMessage, Text: "hi <there>", Data: json.RawMessage(`[1, 2]`)},
		{Kind: CmdComplete, Result: json.RawMessage(`{"ok":true}`)},
		{Kind: CmdFail, Error: &TaskError{Message: "it <broke>", Data: json.RawMessage(`{"at": 3}`)}},
		{Kind: CmdCancel, Reason: "enough"},
	} {
		fresh := task
		fresh.InputRequests = nil
		change, err := Apply(fresh, cmd, now)
		if err != nil {
			t.Fatalf("%s: %v", cmd.Kind, err)
		}
		for _, e := range change.Events {
			cases = append(cases, struct {
				task Task
				e    Emitted
			}{change.Task, e})
		}
	}
	odd := task
	odd.SessionID, odd.TaskID, odd.Revision = "s<&>\x01\xff", "", 0
	cases = append(cases,
		struct {
			task Task
			e    Emitted
		}{odd, Emitted{Type: wire.EventTaskStatus, Data: map[string]any{"task": "replaced", "z": 1, "a": nil, "é": "<"}}},
		struct {
			task Task
			e    Emitted
		}{odd, Emitted{Type: "input.odd", Data: map[string]any{"task": map[string]int{"b": 2, "a": 1}}}},
		struct {
			task Task
			e    Emitted
		}{task, Emitted{Type: wire.EventTaskTerminal}},
	)
	for i, c := range cases {
		snapshot, err := json.Marshal(c.task)
		if err != nil {
			t.Fatal(err)
		}
		want, err := eventJSONByMarshal(c.task, now, c.e, snapshot)
		if err != nil {
			t.Fatal(err)
		}
		got, err := eventJSON(c.task, now, c.e, snapshot)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d (%s):\n got %s\nwant %s", i, c.e.Type, got, want)
		}
	}
	if len(cases) < 10 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// An event a data value cannot be rendered for is refused, as before.
func TestEventJSONRefusesWhatMarshalRefuses(t *testing.T) {
	task, _ := askingTask(t)
	e := Emitted{Type: wire.EventInputResolved, Data: map[string]any{"bad": func() {}}}
	if _, err := eventJSON(task, time.Now(), e, []byte(`{}`)); err == nil {
		t.Fatal("a function was rendered")
	}
}

func BenchmarkEventJSON(b *testing.B) {
	task, _ := askingTask(b)
	snapshot, _ := json.Marshal(task)
	e := Emitted{Type: wire.EventTaskProgress, Data: map[string]any{}}
	now := time.Now()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := eventJSON(task, now, e, snapshot); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := eventJSONByMarshal(task, now, e, snapshot); err != nil {
				b.Fatal(err)
			}
		}
	})
}
