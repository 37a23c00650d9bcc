package store

import (
	"context"
	"fmt"

	"github.com/taskhook/taskhook/problem"
)

// Reply is a write's answer: its JSON, and whether it is the answer an
// earlier request with the same idempotency key got, replayed.
type Reply struct {
	JSON     []byte
	Replayed bool
}

// ReplayOf looks up the stored answer of an earlier request with the same
// idempotency key, without writing: for a request the current state refuses
// that may repeat one that succeeded. ok is false when there is none; a key
// used with another body is problem.ErrIdempotency.
func (s *Store) ReplayOf(ctx context.Context, p int, idem Idempotency) (Reply, bool, error) {
	res, ok, err := s.Replay(ctx, p, idem)
	if err != nil || !ok {
		return Reply{}, false, err
	}
	if res.Outcome == IdemConflict {
		return Reply{}, true, problem.ErrIdempotency
	}
	return Reply{JSON: res.ReplayBody, Replayed: true}, true, nil
}

// Settle answers the outcomes of a write that every idempotent write
// answers alike: the answer of an earlier request with the same key,
// replayed; a key used with another body (problem.ErrIdempotency); a record
// that does not exist (problem.ErrNotFound). Any other outcome is one that
// what (the write, for the error) does not expect.
func Settle(o Outcome, replay []byte, what string) (Reply, error) {
	switch o {
	case Replayed:
		return Reply{JSON: replay, Replayed: true}, nil
	case IdemConflict:
		return Reply{}, problem.ErrIdempotency
	case Missing:
		return Reply{}, problem.ErrNotFound
	}
	return Reply{}, o.Unexpected(what)
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
func ClaimedCreate[R any](ctx context.Context, s *Store, idem Idempotency, create func() (R, error), refused func(R) bool) (R, error) {
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
