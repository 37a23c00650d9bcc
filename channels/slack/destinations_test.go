package slack

import (
	"reflect"
	"testing"
)

// TestParseChannels reads TASKHOOK_SLACK_CHANNELS and refuses what cannot be
// one.
func TestParseChannels(t *testing.T) {
	got, err := ParseChannels(" C012AB = alice | bob ,#deploys=https://id.example#carol|alice|alice")
	if err != nil {
		t.Fatal(err)
	}
	want := Channels{"C012AB": {"alice", "bob"}, "#deploys": {"https://id.example#carol", "alice"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if empty, err := ParseChannels(" "); err != nil || len(empty) != 0 {
		t.Fatalf("the empty list: %v %v", empty, err)
	}
	for _, bad := range []string{"C012AB", "C012AB=", "=alice", "c012ab=alice", "C0-12=alice", "#Deploys=alice", "#=alice",
		"C012AB=alice||bob", "C012AB=alice,,C034=bob", "C012AB=alice,C012AB=bob", "C012AB=alice|"} {
		if _, err := ParseChannels(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// TestDestinationsAllow: a channel is open to the principals listed for it,
// and a mapped Slack user's direct messages to requests of its own
// principal, never to anybody else's.
func TestDestinationsAllow(t *testing.T) {
	d := Destinations{
		Channels: Channels{"C0OPS": {"alice", "bob"}, "U0CAROL": {"bob"}},
		Users:    Users{"U0ALICE": "alice", "U0CAROL": "carol"},
	}
	for _, c := range []struct {
		channel, principal, requester string
		want                          bool
	}{
		{"C0OPS", "alice", "alice", true},
		{"C0OPS", "bob", "carol", true},
		{"C0OPS", "mallory", "mallory", false},   // not listed
		{"C0OTHER", "alice", "alice", false},     // a channel the list does not name
		{"U0ALICE", "agent", "alice", true},      // the requester's own user
		{"U0ALICE", "alice", "bob", false},       // not this requester's
		{"U0CAROL", "mallory", "mallory", false}, // somebody else's user
		{"U0CAROL", "bob", "alice", true},        // listed for bob as a channel
		{"U0NOBODY", "alice", "alice", false},    // unmapped
		{"U0ALICE", "alice", "", false},
	} {
		if got := d.Allows(c.channel, c.principal, c.requester); got != c.want {
			t.Errorf("Allows(%s, %s, %s) = %v", c.channel, c.principal, c.requester, got)
		}
	}
}

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
