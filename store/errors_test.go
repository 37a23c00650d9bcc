package store_test

import (
	"errors"
	"testing"

	"github.com/taskhook/taskhook/problem"
	"github.com/taskhook/taskhook/store"
)

// The store's errors are the services' shared refusals, so a face answers
// them (404, 503) through problem without naming the store.
func TestErrorsAreProblems(t *testing.T) {
	t.Parallel()
	if !errors.Is(store.ErrUnavailable, problem.ErrUnavailable) || store.ErrUnavailable.Error() != "store unavailable" {
		t.Errorf("ErrUnavailable %q is not a problem.ErrUnavailable", store.ErrUnavailable)
	}
	if !errors.Is(store.ErrNotFound, problem.ErrNotFound) || store.ErrNotFound.Error() != "not found" {
		t.Errorf("ErrNotFound %q is not a problem.ErrNotFound", store.ErrNotFound)
	}
}
