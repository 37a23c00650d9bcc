//go:build !linux

package parking

import (
	"errors"
	"net"
)

// connWatch needs epoll: elsewhere there is none, and long-polls wait on
// their connection's goroutine.
type connWatch struct{}

func newConnWatch() (*connWatch, error) { return nil, errors.ErrUnsupported }

func (*connWatch) watch(net.Conn, bool, func()) (func() bool, error) {
	return nil, errors.ErrUnsupported
}

func (*connWatch) close() {}
