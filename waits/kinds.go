package waits

import "slices"

// Kinds are the event types a reader asks for (?kinds=): a long-poll, a log
// read or a stream that wakes on these only. Empty means every type.
type Kinds []string

// All reports whether k asks for every type.
func (k Kinds) All() bool { return len(k) == 0 }

// Has reports whether k asks for events of type t.
func (k Kinds) Has(t string) bool { return k.All() || slices.Contains(k, t) }

// MayConcern reports whether the wake may be about an event k asks for: it
// is when one of its types is one of k, or when its types are unknown.
func (k Kinds) MayConcern(wk Wake) bool {
	if k.All() || wk.Types == nil {
		return true
	}
	for _, t := range wk.Types {
		if k.Has(t) {
			return true
		}
	}
	return false
}
