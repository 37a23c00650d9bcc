package ids

import (
	"errors"
	"testing"
)

func TestIDsNameTheirPartition(t *testing.T) {
	t.Parallel()
	for p := range MaxPartitions {
		id := New(TaskPrefix, p)
		if got, err := PartitionOf(id, TaskPrefix, MaxPartitions); err != nil || got != p {
			t.Fatalf("PartitionOf(%q) = %d, %v; want %d", id, got, err, p)
		}
	}
	for name, id := range map[string]string{
		"another prefix":       New(SessionPrefix, 1),
		"too short":            New(TaskPrefix, 1)[:10],
		"outside the alphabet": TaskPrefix + "01" + "ilou0000000000000000000000",
		"partition too large":  New(TaskPrefix, 20),
	} {
		if _, err := PartitionOf(id, TaskPrefix, 16); !errors.Is(err, ErrBadID) {
			t.Errorf("%s: %q read as an id (%v)", name, id, err)
		}
	}
}

func TestPartitionForIsStable(t *testing.T) {
	t.Parallel()
	if a, b := PartitionFor("alice\nPOST /v1/tasks\nk", 16), PartitionFor("alice\nPOST /v1/tasks\nk", 16); a != b || a < 0 || a >= 16 {
		t.Fatalf("PartitionFor: %d then %d", a, b)
	}
}

func TestEventIDs(t *testing.T) {
	t.Parallel()
	for id, next := range map[string]string{
		"1733000000000-0": "1733000000000-1",
		"1733000000000-7": "1733000000000-8",
		"1733000000000":   "1733000000001-0", // every event of that millisecond
		"0-0":             "0-1",
	} {
		if got, err := NextEventID(id); err != nil || got != next || !ValidEventID(id) {
			t.Errorf("NextEventID(%q) = %q, %v; want %q", id, got, err, next)
		}
	}
	for _, id := range []string{"", "-", "x", "1-", "-1", "1-x", "1.5", "1-2-3", "-1-0", "18446744073709551616"} {
		if _, err := NextEventID(id); !errors.Is(err, ErrBadID) || ValidEventID(id) {
			t.Errorf("%q read as an event id (%v)", id, err)
		}
	}
}
