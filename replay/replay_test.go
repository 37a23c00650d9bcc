package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/replay"
	"github.com/taskhook/taskhook/store"
)

var (
	alice = authz.Principal{ID: "alice"}
	bob   = authz.Principal{ID: "bob"}
)

// A kept answer is sealed to the principal whose key it is: it opens for
// that principal only, and the store never holds the secret in clear.
func TestSealedAnswerOpensForItsPrincipalOnly(t *testing.T) {
	v := authz.NewRandomVault()
	answer := []byte(`{"notify":[{"secret":"whsec_c2VjcmV0"}]}`)
	kept := replay.Seal(v, alice, answer)
	if bytes.Contains(kept, []byte("whsec_")) || kept[0] == '{' {
		t.Fatalf("kept answer is in clear: %s", kept)
	}
	got, err := replay.Open(v, alice, kept)
	if err != nil || !bytes.Equal(got, answer) {
		t.Fatalf("Open = %s, %v; want the answer", got, err)
	}
	if _, err := replay.Open(v, bob, kept); err == nil {
		t.Fatal("an answer kept for alice opened for bob")
	}
}

// An answer that holds no endpoint, or one an earlier version kept in
// clear, is JSON as it is; so is every answer without a vault.
func TestClearAnswersOpenAsTheyAre(t *testing.T) {
	v := authz.NewRandomVault()
	for _, kept := range [][]byte{nil, []byte(`{"taskId":"t_1"}`)} {
		got, err := replay.Open(v, alice, kept)
		if err != nil || !bytes.Equal(got, kept) {
			t.Fatalf("Open(%q) = %q, %v", kept, got, err)
		}
	}
	got, err := replay.Open(nil, alice, []byte("k1.sealed"))
	if err != nil || string(got) != "k1.sealed" {
		t.Fatalf("Open without a vault = %q, %v", got, err)
	}
}

// Settle opens a replayed answer, and answers every other outcome as
// store.Settle does.
func TestSettleOpensTheReplayedAnswer(t *testing.T) {
	v := authz.NewRandomVault()
	answer := []byte(`{"sessionId":"s_1","notify":[]}`)
	reply, err := replay.Settle(v, alice, store.Replayed, replay.Seal(v, alice, answer), "create session")
	if err != nil || !reply.Replayed || !bytes.Equal(reply.JSON, answer) {
		t.Fatalf("Settle = %+v, %v; want the answer replayed", reply, err)
	}
	if _, err := replay.Settle(v, alice, store.IdemConflict, nil, "create session"); !errors.Is(err, problem.ErrIdempotency) {
		t.Fatalf("Settle of a conflict = %v, want problem.ErrIdempotency", err)
	}
	if _, err := replay.Settle(v, alice, store.Missing, nil, "create session"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("Settle of a missing record = %v, want problem.ErrNotFound", err)
	}
}
