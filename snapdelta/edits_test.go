package snapdelta_test

import (
	"bytes"
	"testing"

	"github.com/taskhook/taskhook/snapdelta"
)

// Each revision of a task's life is the one before with its edits applied,
// byte for byte, and the edits are a small part of the snapshot: what a
// command sends the store in place of the whole.
func TestEditsTakeEachRevisionForward(t *testing.T) {
	revs := life(t)
	for r := 1; r < len(revs); r++ {
		edits, err := snapdelta.Edits(revs[r-1], revs[r])
		if err != nil {
			t.Fatal(err)
		}
		got, err := snapdelta.ApplyEdits(revs[r-1], edits)
		if err != nil || !bytes.Equal(got, revs[r]) {
			t.Fatalf("revision %d from %d:\n got %s (%v)\nwant %s\n(edits %s)", r+1, r, got, err, revs[r], edits)
		}
		if len(edits) >= len(revs[r])/2 {
			t.Errorf("the edits to revision %d are %d bytes of a %d-byte snapshot: %s", r+1, len(edits), len(revs[r]), edits)
		}
		if bytes.Contains(edits, []byte(`"taskId"`)) || bytes.Contains(edits, []byte(`"input"`)) {
			t.Errorf("the edits to revision %d hold members that did not change: %s", r+1, edits)
		}
	}
}

// Edits made for other bytes are refused, not applied to the wrong ones,
// and so are edits that are not edits.
func TestEditsRefuseOtherBytes(t *testing.T) {
	revs := life(t)
	edits, err := snapdelta.Edits(revs[0], revs[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapdelta.ApplyEdits(append([]byte(" "), revs[0]...), edits); err == nil {
		t.Error("edits applied to bytes of another length")
	}
	same := bytes.Replace(revs[0], []byte(`"deploy"`), []byte(`"deplox"`), 1)
	if _, err := snapdelta.ApplyEdits(same, edits); err == nil {
		t.Error("edits applied to other bytes of the same length")
	}
	empty, err := snapdelta.Edits([]byte(`{}`), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	base := string(empty)
	for _, bad := range []string{``, `{}`, base[:10], base + `0,1`, base + `0,3,0:`, base + `1,0,0:0,0,0:`,
		base + `0,0,5:ab`, base + `x,0,0:`, `=` + base[2:] + `0,0,0:`} {
		if got, err := snapdelta.ApplyEdits([]byte(`{}`), []byte(bad)); err == nil {
			t.Errorf("ApplyEdits(%q) = %s, no error", bad, got)
		}
	}
}

// Any two objects json.Marshal writes from maps: the edits take the first
// to the second.
func FuzzEdits(f *testing.F) {
	fuzzObjects(f, func(t *testing.T, older, newer []byte) {
		edits, err := snapdelta.Edits(older, newer)
		if err != nil {
			t.Fatalf("edits of %s and %s: %v", older, newer, err)
		}
		got, err := snapdelta.ApplyEdits(older, edits)
		if err != nil || !bytes.Equal(got, newer) {
			t.Fatalf("%s with %s: %s (%v), want %s", older, edits, got, err, newer)
		}
	})
}

// BenchmarkEdits is the edits a progress report sends, on a task snapshot
// of the size the side-by-side load writes.
func BenchmarkEdits(b *testing.B) {
	older := []byte(`{"taskId":"task_07e3qfe80xc0tsg1z7w0ccnnme41","sessionId":"ses_0764cy183p98n94p883yw09dhw1a","owner":"perf","executor":"perf","requester":"perf","status":"working","revision":1,"kind":"perf","input":{"i":76},"inputResponses":[],"createdAt":"2026-12-05T05:13:54.711Z","lastUpdatedAt":"2026-12-05T05:13:54.711Z","ttlMs":604800000,"expiresAt":"2026-12-12T05:13:54.711Z","pollIntervalMs":5000}`)
	newer := []byte(`{"taskId":"task_07e3qfe80xc0tsg1z7w0ccnnme41","sessionId":"ses_0764cy183p98n94p883yw09dhw1a","owner":"perf","executor":"perf","requester":"perf","status":"working","revision":2,"kind":"perf","input":{"i":76},"statusMessage":"working on it","inputResponses":[],"createdAt":"2026-12-05T05:13:54.711Z","lastUpdatedAt":"2026-12-05T05:13:54.713Z","ttlMs":604800000,"expiresAt":"2026-12-12T05:13:54.711Z","pollIntervalMs":5000}`)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		edits, err := snapdelta.Edits(older, newer)
		if err != nil {
			b.Fatal(err)
		}
		n = len(edits)
	}
	b.ReportMetric(float64(n), "bytes/op")
}
