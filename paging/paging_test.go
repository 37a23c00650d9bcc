package paging_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/taskhook/taskhook/paging"
	"github.com/taskhook/taskhook/problem"
)

func TestCursorGoesOnWhereItWasWritten(t *testing.T) {
	t.Parallel()
	if got := (*paging.Position)(nil).Cursor(); got != "" {
		t.Errorf("the end's cursor is %q, want none", got)
	}
	if p, err := paging.After(""); p != nil || err != nil {
		t.Errorf(`After("") = %+v, %v; want the start`, p, err)
	}
	for _, want := range []paging.Position{{Score: 1_700_000_000_000, ID: "task_01abc"}, {Score: 0, ID: "x:y"}, {Score: -5, ID: "ses_1"}} {
		got, err := paging.After(want.Cursor())
		if err != nil || got == nil || *got != want {
			t.Errorf("After(%q) = %+v, %v; want %+v", want.Cursor(), got, err, want)
		}
	}
}

func TestCursorsNotWrittenHereAreRefused(t *testing.T) {
	t.Parallel()
	b64 := base64.RawURLEncoding.EncodeToString
	for _, c := range []string{"%%%", "a", b64([]byte("12")), b64([]byte("x:task_1")), b64([]byte("12:")), b64([]byte(":id"))} {
		if p, err := paging.After(c); !errors.Is(err, problem.ErrBadCursor) || p != nil {
			t.Errorf("After(%q) = %+v, %v; want problem.ErrBadCursor", c, p, err)
		}
	}
}
