//go:build linux

package parking

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// connWatch tells when connections held off net/http hang up or, for an
// idle one, send their next request: one epoll set for all of them, waited
// on by one goroutine, where net/http keeps a goroutine per connection
// blocked in a read.
type connWatch struct {
	epfd int
	stop [2]int // a pipe: a byte written to it ends the wait
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	watched map[int32]watched // by file descriptor
	serial  int32
}

// watched is one watch of a connection. Its serial tells its events from
// those of an earlier watch on a descriptor since closed and given out
// again.
type watched struct {
	serial int32
	fn     func()
}

func newConnWatch() (*connWatch, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	cw := &connWatch{epfd: epfd, done: make(chan struct{}), watched: map[int32]watched{}}
	if err := syscall.Pipe2(cw.stop[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(cw.stop[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, cw.stop[0], &ev); err != nil {
		cw.closeFDs()
		return nil, err
	}
	go cw.run()
	return cw, nil
}

// watch calls fn once, on the watch's goroutine, when c's client hangs up
// or, with data, sends anything (a hang-up then reads as the end of the
// data). fn must not block. cancel ends the watch: it reports false when fn
// has been or is being called. The caller holds c open until then.
func (cw *connWatch) watch(c net.Conn, data bool, fn func()) (cancel func() bool, err error) {
	rc, err := rawConnOf(c)
	if err != nil {
		return nil, err
	}
	events := uint32(syscall.EPOLLRDHUP | syscall.EPOLLONESHOT) // EPOLLHUP and EPOLLERR come always
	if data {
		events |= syscall.EPOLLIN
	}
	var fd int32
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.serial++
	serial := cw.serial
	ctlErr := rc.Control(func(f uintptr) {
		fd = int32(f)
		err = syscall.EpollCtl(cw.epfd, syscall.EPOLL_CTL_ADD, int(f), &syscall.EpollEvent{Events: events, Fd: fd, Pad: serial})
	})
	if err = errors.Join(ctlErr, err); err != nil {
		return nil, err
	}
	cw.watched[fd] = watched{serial: serial, fn: fn}
	return func() bool { return cw.take(fd, serial) != nil }, nil
}

// take ends the watch on fd if it is the one of serial, and returns its fn.
func (cw *connWatch) take(fd, serial int32) func() {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	w, ok := cw.watched[fd]
	if !ok || w.serial != serial {
		return nil
	}
	delete(cw.watched, fd)
	// The connection is open while it is watched, so fd is still its own.
	_ = syscall.EpollCtl(cw.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	return w.fn
}

func (cw *connWatch) run() {
	defer close(cw.done)
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(cw.epfd, events, -1)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(cw.stop[0]) {
				return
			}
			if fn := cw.take(ev.Fd, ev.Pad); fn != nil {
				fn()
			}
		}
	}
}

// close ends the watch's goroutine. Watches left are never called.
func (cw *connWatch) close() {
	cw.once.Do(func() {
		_, _ = syscall.Write(cw.stop[1], []byte{0})
		<-cw.done
		cw.closeFDs()
	})
}

func (cw *connWatch) closeFDs() {
	syscall.Close(cw.stop[0])
	syscall.Close(cw.stop[1])
	syscall.Close(cw.epfd)
}

// rawConnOf is the socket under c and the wrappers of it that say what they
// wrap (NetConn).
func rawConnOf(c net.Conn) (syscall.RawConn, error) {
	for {
		if sc, ok := c.(syscall.Conn); ok {
			return sc.SyscallConn()
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil, errors.ErrUnsupported
		}
		c = w.NetConn()
	}
}
