package store_test

import (
	"context"
	"testing"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// An idempotency claim binds a key to one body for the key's life: the same
// body claims it again, another is refused, and only a claim for the body
// being released is released.
func TestIdempotencyClaims(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, cfg store.Config) {
		s := open(t, cfg)
		ctx := context.Background()
		claim := func(idem idem.Key) bool {
			t.Helper()
			ok, err := s.ClaimIdempotency(ctx, idem)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		release := func(idem idem.Key) {
			t.Helper()
			if err := s.ReleaseIdempotency(ctx, idem); err != nil {
				t.Fatal(err)
			}
		}
		scope := "alice\nPOST /v1/tasks\nk1"
		first, other := idem.Key{Scope: scope, BodyHash: "h1"}, idem.Key{Scope: scope, BodyHash: "h2"}

		if !claim(idem.Key{}) {
			t.Fatal("a request without a key was refused")
		}
		release(idem.Key{})
		if !claim(first) {
			t.Fatal("the first claim of a key was refused")
		}
		if !claim(first) {
			t.Fatal("the same body could not claim its key again")
		}
		if claim(other) {
			t.Fatal("another body claimed a key bound to the first")
		}
		// Another body's release leaves the claim as it is.
		release(other)
		if claim(other) {
			t.Fatal("another body claimed the key after its own release")
		}
		if !claim(first) {
			t.Fatal("the first body lost its claim to another body's release")
		}
		// The claim's own release frees the key, for any body.
		release(first)
		if !claim(other) {
			t.Fatal("the key is still bound after its claim was released")
		}
		if claim(first) {
			t.Fatal("the first body claimed the key another body holds now")
		}
		// Keys are scoped: another key is free.
		if !claim(idem.Key{Scope: scope + "x", BodyHash: "h1"}) {
			t.Fatal("a claim on one key refused another key")
		}
		ttl, err := s.RDB.PTTL(ctx, s.Keys.IdempotencyClaim(ids.PartitionFor(scope, s.Partitions), scope)).Result()
		if err != nil || ttl <= store.IdempotencyTTL-store.IdempotencyTTL/24 || ttl > store.IdempotencyTTL {
			t.Fatalf("the claim lives %v (%v), want the key's life of %v", ttl, err, store.IdempotencyTTL)
		}
	})
}
