package slack

import (
	"reflect"
	"testing"
)

// TestParseUsers reads TASKHOOK_SLACK_USERS and refuses what cannot be one.
func TestParseUsers(t *testing.T) {
	got, err := ParseUsers(" U012AB=alice, W034CD = https://id.example#bob ")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Users{"U012AB": "alice", "W034CD": "https://id.example#bob"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p, ok := got.Principal("U012AB"); !ok || p != "alice" {
		t.Fatalf("Principal(U012AB) = %q, %v", p, ok)
	}
	if _, ok := got.Principal("U999"); ok {
		t.Fatal("an unmapped user has a principal")
	}
	if empty, err := ParseUsers(""); err != nil || len(empty) != 0 {
		t.Fatalf("the empty list: %v %v", empty, err)
	}
	for _, bad := range []string{"U012AB", "U012AB=", "=alice", "u012ab=alice", "X012AB=alice", "U012AB=alice,,U034CD=bob",
		"U012AB=alice,U012AB=bob", "U0-12=alice"} {
		if _, err := ParseUsers(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}
