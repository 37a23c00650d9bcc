package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/problem"
)

// ErrUnavailable is Redis being down, slow or busy: the caller gets a 503 with
// Retry-After and may try again. It is a problem.ErrUnavailable, so a face
// answers it without naming the store.
var ErrUnavailable = fmt.Errorf("store %w", problem.ErrUnavailable)

// ErrNotFound is a record that does not exist (or has expired). It is a
// problem.ErrNotFound, so a face answers it without naming the store.
var ErrNotFound = fmt.Errorf("%w", problem.ErrNotFound)

// unavailable classifies a Redis error. A reply error that says the server is
// loading, failing over or down is unavailability; so is any network error or
// timeout. Any other reply error is a bug and stays as it is (a 500).
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "READONLY", "MOVED", "ASK"} {
			if strings.HasPrefix(msg, p) {
				return fmt.Errorf("%w: %s", ErrUnavailable, p)
			}
		}
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// connectionLost reports an error that broke the connection under a command
// that was (or may have been) sent, as opposed to a timeout or a reply: the
// command may be sent again on another connection when it carries a command
// id.
func connectionLost(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}
