package store

import (
	"context"
	"fmt"

	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"
)

// ReplayOf looks up the stored answer of an earlier request with the same
// idempotency key, without writing: for a request the current state refuses
// that may repeat one that succeeded. ok is false when there is none; a key
// used with another body is problem.ErrIdempotency.
func (s *Store) ReplayOf(ctx context.Context, p int, key idem.Key) (idem.Reply, bool, error) {
	res, ok, err := s.Replay(ctx, p, key)
	if err != nil || !ok {
		return idem.Reply{}, false, err
	}
	if res.Outcome == IdemConflict {
		return idem.Reply{}, true, problem.ErrIdempotency
	}
	return idem.Reply{JSON: res.ReplayBody, Replayed: true}, true, nil
}

// Settle answers the outcomes of a write that every idempotent write
// answers alike: the answer of an earlier request with the same key,
// replayed; a key used with another body (problem.ErrIdempotency); a record
// that does not exist (problem.ErrNotFound). Any other outcome is one that
// what (the write, for the error) does not expect.
func Settle(o Outcome, replay []byte, what string) (idem.Reply, error) {
	switch o {
	case Replayed:
		return idem.Reply{JSON: replay, Replayed: true}, nil
	case IdemConflict:
		return idem.Reply{}, problem.ErrIdempotency
	case Missing:
		return idem.Reply{}, problem.ErrNotFound
	}
	return idem.Reply{}, o.Unexpected(what)
}

// Unexpected is the error of an outcome that what (the write or read, for
// the error) does not expect.
func (o Outcome) Unexpected(what string) error {
	return fmt.Errorf("%s: unexpected outcome %d", what, o)
}

// ClaimedCreate runs a create whose record lives in a partition its body
// chooses (a task goes where its session is): the idempotency key is claimed
// in its own partition first, so a repeat naming another parent is a
// conflict too, and released again when the create was refused (nothing was
// stored, so the key may serve another body). A key bound to another body is
// problem.ErrIdempotency.
func ClaimedCreate[R any](ctx context.Context, s *Store, idem idem.Key, create func() (R, error), refused func(R) bool) (R, error) {
	var zero R
	ok, err := s.ClaimIdempotency(ctx, idem)
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, problem.ErrIdempotency
	}
	res, err := create()
	if err != nil {
		return zero, err
	}
	if refused(res) {
		if err := s.ReleaseIdempotency(ctx, idem); err != nil {
			return zero, err
		}
	}
	return res, nil
}
