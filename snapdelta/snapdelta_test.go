package snapdelta_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/snapdelta"
)

type task = wire.Task[time.Time, string]

// apply is the snapshot before snapshot: Back with the one undo.
func apply(snapshot, undo []byte) ([]byte, error) {
	back, err := snapdelta.Back(snapshot, [][]byte{undo})
	if err != nil {
		return nil, err
	}
	return back[0], nil
}

func marshal(t *testing.T, v task) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// life is a task's snapshots, revision by revision: a message, a question,
// its answer, progress, the result.
func life(t *testing.T) [][]byte {
	t.Helper()
	at := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	ttl := int64(604800000)
	exp := at.Add(7 * 24 * time.Hour)
	v := task{TaskID: "task_1", SessionID: "ses_1", Owner: "alice", Executor: "alice", Requester: "alice",
		Status: wire.StatusWorking, Revision: 1, Kind: "deploy", Input: json.RawMessage(`{"env":"prod","n":[1,2,{"x":"}"}]}`),
		InputResponses: []wire.InputResponse[time.Time]{}, CreatedAt: at, LastUpdatedAt: at, TTLMs: &ttl, ExpiresAt: &exp, PollIntervalMs: 5000}
	var revs [][]byte
	step := func(f func(*task)) {
		f(&v)
		v.Revision++
		v.LastUpdatedAt = v.LastUpdatedAt.Add(time.Second)
		revs = append(revs, marshal(t, v))
	}
	revs = append(revs, marshal(t, v))
	step(func(v *task) { v.StatusMessage = `working on it, "quoted" \ and }` })
	step(func(v *task) {
		v.Status = wire.StatusInputRequired
		v.InputRequests = []wire.InputRequest{{RequestID: "req_1", Kind: "ask", Prompt: "Ship it?"}}
	})
	step(func(v *task) {
		v.Status = wire.StatusWorking
		v.InputRequests = nil
		v.InputResponses = append(v.InputResponses, wire.InputResponse[time.Time]{Answer: wire.Answer{RequestID: "req_1", OptionID: "yes"}, AnsweredBy: "alice", AnsweredAt: v.LastUpdatedAt, Via: "api"})
	})
	step(func(v *task) { v.Progress = json.RawMessage(`{"pct":50}`); v.StatusMessage = "" })
	step(func(v *task) { v.Status = wire.StatusCompleted; v.Result = json.RawMessage(`{"ok":true}`) })
	return revs
}

// A task's life, revision by revision: each undo takes the next snapshot
// back to this one byte for byte, members the later one dropped or added
// included, and holds only what changed.
func TestUndoTakesEachRevisionBack(t *testing.T) {
	revs := life(t)
	stamp := func(snap []byte) []byte {
		i := bytes.Index(snap, []byte(`"lastUpdatedAt":`))
		return snap[i : i+len(`"lastUpdatedAt":"2026-12-05T06:00:00Z"`)]
	}
	for r := len(revs) - 1; r > 0; r-- {
		undo, err := snapdelta.Undo(revs[r-1], revs[r])
		if err != nil {
			t.Fatal(err)
		}
		back, err := apply(revs[r], undo)
		if err != nil {
			t.Fatal(err)
		}
		// Back leaves lastUpdatedAt as the later snapshot has it: a read
		// writes the time of the revision's events there.
		want := bytes.Replace(revs[r-1], stamp(revs[r-1]), stamp(revs[r]), 1)
		if !bytes.Equal(back, want) {
			t.Errorf("revision %d back from %d:\n got %s\nwant %s\n(undo %s)", r, r+1, back, want, undo)
		}
		if bytes.Contains(undo, []byte(`"revision"`)) || bytes.Contains(undo, []byte(`"lastUpdatedAt"`)) {
			t.Errorf("the undo to revision %d keeps what every revision stamps: %s", r, undo)
		}
		// An undo written before, with both, takes it back whole.
		old := append([]byte(fmt.Sprintf(`{"revision":%d,`, r)), stamp(revs[r-1])...)
		if len(undo) > 2 {
			old = append(old, ',')
		}
		old = append(old, undo[1:]...)
		if back, err := apply(revs[r], old); err != nil || !bytes.Equal(back, revs[r-1]) {
			t.Errorf("revision %d back from %d by an undo written before:\n got %s (%v)\nwant %s\n(undo %s)", r, r+1, back, err, revs[r-1], old)
		}
		if len(undo) >= len(revs[r-1])/2 {
			t.Errorf("the undo to revision %d is %d bytes of a %d-byte snapshot: %s", r, len(undo), len(revs[r-1]), undo)
		}
		if bytes.Contains(undo, []byte(`"taskId"`)) || bytes.Contains(undo, []byte(`"input"`)) {
			t.Errorf("the undo to revision %d holds members that never change: %s", r, undo)
		}
	}
}

// An undo of the same snapshot is empty, and applying it changes nothing
// but the revision.
func TestUndoOfNoChangeIsEmpty(t *testing.T) {
	s := []byte(`{"taskId":"t","revision":2,"input":{"a":[1,{"b":"]"}]}}`)
	undo, err := snapdelta.Undo(s, s)
	if err != nil || string(undo) != "{}" {
		t.Fatalf("undo %s, %v; want {}", undo, err)
	}
	back, err := apply(s, undo)
	if want := `{"taskId":"t","revision":1,"input":{"a":[1,{"b":"]"}]}}`; err != nil || string(back) != want {
		t.Fatalf("apply: %s, %v; want %s", back, err, want)
	}
}

// What is not an object is refused, not misread.
func TestRefusesWhatIsNotAnObject(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"a":1`, `{"a":"x}`, `{"a" 1}`, `{"a":}`, `{"a":1}x`, `{"a":[1,2}`} {
		if _, err := snapdelta.Undo([]byte(bad), []byte(`{}`)); err == nil {
			t.Errorf("Undo(%q) answered no error", bad)
		}
		if _, err := apply([]byte(`{}`), []byte(bad)); err == nil {
			t.Errorf("Back(undo %q) answered no error", bad)
		}
	}
}

// Any two objects json.Marshal writes from maps: the undo takes the second
// back to the first, up to member order (a map's members come sorted, not
// in a wire.Task's order) and the members every revision stamps.
func FuzzUndo(f *testing.F) {
	fuzzObjects(f, func(t *testing.T, older, newer []byte) {
		if _, named := numbers(t, older)["-"]; named {
			return // the name an undo keeps its list of dropped members under: no task member has it
		}
		if _, named := numbers(t, newer)["-"]; named {
			return
		}
		undo, err := snapdelta.Undo(older, newer)
		if err != nil {
			t.Fatalf("undo of %s and %s: %v", older, newer, err)
		}
		back, err := apply(newer, undo)
		if err != nil {
			t.Fatalf("apply %s to %s: %v", undo, newer, err)
		}
		got, want := numbers(t, back), numbers(t, older)
		// The members every revision stamps are not in the undo: Back
		// writes the revision as one less than newer's (when newer's is a
		// whole number) and leaves lastUpdatedAt as newer has it; a member
		// older lacks is dropped.
		cur := numbers(t, newer)
		for _, name := range []string{"revision", "lastUpdatedAt"} {
			if _, ok := want[name]; !ok {
				continue
			}
			v, ok := cur[name]
			if !ok {
				delete(want, name)
				continue
			}
			want[name] = v
			if n, isNumber := v.(json.Number); isNumber && name == "revision" {
				if rev, err := strconv.ParseInt(string(n), 10, 64); err == nil {
					want[name] = json.Number(strconv.FormatInt(rev-1, 10))
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("back %s, want %v (from %s and %s, undo %s)", back, want, older, newer, undo)
		}
	})
}

// numbers is a JSON object decoded with its numbers as written.
func numbers(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", b, err)
	}
	return m
}

// fuzzObjects runs check on any two objects json.Marshal writes from maps,
// the fuzzer's pairs of strings that decode to objects.
func fuzzObjects(f *testing.F, check func(t *testing.T, older, newer []byte)) {
	f.Add(`{"a":1,"b":"x"}`, `{"b":"y","c":[1,2]}`)
	f.Add(`{"status":"working","revision":1}`, `{"status":"completed","revision":2,"result":{"ok":true}}`)
	f.Add(`{}`, `{"x":"\"}"}`)
	f.Add(`{"a":1,"b":2,"c":3}`, `{}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var ma, mb map[string]any
		if json.Unmarshal([]byte(a), &ma) != nil || json.Unmarshal([]byte(b), &mb) != nil || ma == nil || mb == nil {
			return
		}
		older, _ := json.Marshal(ma)
		newer, _ := json.Marshal(mb)
		check(t, older, newer)
	})
}

// progress is a task snapshot of the size the side-by-side load writes,
// before and after a progress report: what the benchmarks work on.
var progress = [2][]byte{
	[]byte(`{"taskId":"task_07e3qfe80xc0tsg1z7w0ccnnme41","sessionId":"ses_0764cy183p98n94p883yw09dhw1a","owner":"perf","executor":"perf","requester":"perf","status":"working","revision":1,"kind":"perf","input":{"i":76},"inputResponses":[],"createdAt":"2026-12-05T05:13:54.711Z","lastUpdatedAt":"2026-12-05T05:13:54.711Z","ttlMs":604800000,"expiresAt":"2026-12-12T05:13:54.711Z","pollIntervalMs":5000}`),
	[]byte(`{"taskId":"task_07e3qfe80xc0tsg1z7w0ccnnme41","sessionId":"ses_0764cy183p98n94p883yw09dhw1a","owner":"perf","executor":"perf","requester":"perf","status":"working","revision":2,"kind":"perf","input":{"i":76},"statusMessage":"working on it","inputResponses":[],"createdAt":"2026-12-05T05:13:54.711Z","lastUpdatedAt":"2026-12-05T05:13:54.713Z","ttlMs":604800000,"expiresAt":"2026-12-12T05:13:54.711Z","pollIntervalMs":5000}`),
}

// BenchmarkUndo is the undo a progress report stores.
func BenchmarkUndo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snapdelta.Undo(progress[0], progress[1]); err != nil {
			b.Fatal(err)
		}
	}
}
