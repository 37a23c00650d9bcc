package store_test

import (
	"context"
	"testing"

	"github.com/taskhook/taskhook/store"
)

// A post's ingest writes the hook's config sealed again in the same script,
// only while the stored config is still the one read: reading a hook's
// token never writes.
func TestIngestResealsTheHookConfig(t *testing.T) {
	eachHook(t, true, func(t *testing.T, s *store.Store, f hookFixture) {
		ctx := context.Background()
		config := func() string {
			tok, err := s.HookByToken(ctx, f.part, "hash-"+f.hook)
			if err != nil {
				t.Fatal(err)
			}
			return string(tok.Config)
		}
		read := config()

		// Another config read earlier: the stored one is left alone.
		if res := f.ingest(t, post{body: "1", reseal: store.Reseal{Read: []byte(`{"old":1}`), Sealed: []byte(`{"x":1}`)}}); res.Outcome != store.OK {
			t.Fatalf("post: %+v", res)
		}
		if got := config(); got != read {
			t.Fatalf("config %s after a reseal of another one, want %s", got, read)
		}

		if res := f.ingest(t, post{body: "2", reseal: store.Reseal{Read: []byte(read), Sealed: []byte(`{"sealed":2}`)}}); res.Outcome != store.OK {
			t.Fatalf("post: %+v", res)
		}
		if got := config(); got != `{"sealed":2}` {
			t.Fatalf("config %s after a reseal, want the sealed one", got)
		}

		// A post with nothing to reseal leaves it as it is.
		if res := f.ingest(t, post{body: "3"}); res.Outcome != store.OK {
			t.Fatalf("post: %+v", res)
		}
		if got := config(); got != `{"sealed":2}` {
			t.Fatalf("config %s after a plain post", got)
		}
	})
}
