package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/ids"
)

// Provider sign-in (package connections): a requester's sealed tokens and the
// sign-in attempts of tasks. Attempts are written by ApplyTask together with
// the request they answer; these are the plain reads and writes around them.

// ConnectionToken returns what PutConnectionToken stored, or ErrNotFound.
func (s *Store) ConnectionToken(ctx context.Context, requester, connection string) ([]byte, error) {
	return s.getBytes(ctx, s.connectionTokenKey(requester, connection))
}

// PutConnectionToken stores a requester's sealed token for a connection, for ttl.
func (s *Store) PutConnectionToken(ctx context.Context, requester, connection string, value []byte, ttl time.Duration) error {
	return unavailable(s.RDB.Set(ctx, s.connectionTokenKey(requester, connection), value, ttl).Err())
}

// DeleteConnectionToken removes a requester's token for a connection; removed
// is false when there was none.
func (s *Store) DeleteConnectionToken(ctx context.Context, requester, connection string) (removed bool, err error) {
	n, err := s.RDB.Del(ctx, s.connectionTokenKey(requester, connection)).Result()
	return n > 0, unavailable(err)
}

func (s *Store) connectionTokenKey(requester, connection string) string {
	// The requester's partition, whatever the connection: a token serves
	// every task of its requester.
	return s.Keys.ConnectionToken(ids.PartitionFor(requester, s.Partitions), requester, connection)
}

// SigninAttempt returns what ApplyTask stored for an attempt token's hash, or
// ErrNotFound.
func (s *Store) SigninAttempt(ctx context.Context, p int, tokenHash string) ([]byte, error) {
	return s.getBytes(ctx, s.Keys.SigninAttempt(p, tokenHash))
}

// ClaimSigninAttempt removes an attempt so it serves once: ok is false when
// another request claimed it first.
func (s *Store) ClaimSigninAttempt(ctx context.Context, p int, tokenHash string) (ok bool, err error) {
	n, err := s.RDB.Del(ctx, s.Keys.SigninAttempt(p, tokenHash)).Result()
	return n == 1, unavailable(err)
}

func (s *Store) getBytes(ctx context.Context, key string) ([]byte, error) {
	b, err := s.RDB.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	return b, nil
}
