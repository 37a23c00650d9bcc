package snapdelta_test

import (
	"bytes"
	"testing"

	"github.com/taskhook/taskhook/snapdelta"
)

// Each revision of a task's life is the one before with its edits applied,
// byte for byte, and the edits are a small part of the snapshot: what a
// command sends the store in place of the whole. UndoAndEdits makes the
// same undo and edits as Undo and Edits.
func TestEditsTakeEachRevisionForward(t *testing.T) {
	revs := life(t)
	for r := 1; r < len(revs); r++ {
		edits, err := snapdelta.Edits(revs[r-1], revs[r])
		if err != nil {
			t.Fatal(err)
		}
		undo, _ := snapdelta.Undo(revs[r-1], revs[r])
		undo2, edits2, err := snapdelta.UndoAndEdits(revs[r-1], revs[r])
		if err != nil || !bytes.Equal(undo2, undo) || !bytes.Equal(edits2, edits) {
			t.Errorf("UndoAndEdits to revision %d: %s, %s (%v); Undo %s, Edits %s", r+1, undo2, edits2, err, undo, edits)
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

// BenchmarkEdits is the edits a progress report sends.
func BenchmarkEdits(b *testing.B) {
	b.ReportAllocs()
	var n int
	for b.Loop() {
		edits, err := snapdelta.Edits(progress[0], progress[1])
		if err != nil {
			b.Fatal(err)
		}
		n = len(edits)
	}
	b.ReportMetric(float64(n), "bytes/op")
}

// BenchmarkUndoAndEdits is both, as a task command makes them, each
// snapshot read once.
func BenchmarkUndoAndEdits(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := snapdelta.UndoAndEdits(progress[0], progress[1]); err != nil {
			b.Fatal(err)
		}
	}
}
