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
