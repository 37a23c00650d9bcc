package store

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// readAll reads from c until it has n bytes.
func readAll(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return buf
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

// Both ends write far more than any buffer ahead of a read, neither reading,
// and each write returns at once; then each reads what the other wrote, in
// order. Over a synchronous pipe the first write would wait for good.
func TestMemConnWritesNeverWaitForTheReader(t *testing.T) {
	a, b := memConnPair()
	defer a.Close()
	defer b.Close()
	// A deadline only so that a write that does wait fails the test
	// instead of hanging it.
	for _, c := range []net.Conn{a, b} {
		if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	chunk := func(end, i int) []byte { return bytes.Repeat([]byte{byte(end*16 + i)}, 1<<20) }
	const chunks = 8
	for i := range chunks {
		for end, c := range []net.Conn{a, b} {
			if n, err := c.Write(chunk(end, i)); err != nil || n != 1<<20 {
				t.Fatalf("write %d of end %d: %d, %v", i, end, n, err)
			}
		}
	}
	for end, c := range []net.Conn{b, a} {
		got := readAll(t, c, chunks<<20)
		for i := range chunks {
			if !bytes.Equal(got[i<<20:(i+1)<<20], chunk(end, i)) {
				t.Fatalf("end %d read chunk %d changed", 1-end, i)
			}
		}
	}
}

// A closed end's reads and writes fail with net.ErrClosed; the other end
// reads what was written before the close, then io.EOF, and its writes
// fail.
func TestMemConnClose(t *testing.T) {
	a, b := memConnPair()
	if _, err := a.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second close: %v, want net.ErrClosed", err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read on the closed end: %v, want net.ErrClosed", err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write on the closed end: %v, want net.ErrClosed", err)
	}
	if err := a.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("deadline on the closed end: %v, want net.ErrClosed", err)
	}
	if got := readAll(t, b, len("last words")); string(got) != "last words" {
		t.Errorf("the other end read %q", got)
	}
	if n, err := b.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("read past the close: %d, %v; want io.EOF", n, err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write to a closed end: %v, want io.ErrClosedPipe", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// A read that waits ends when its own end closes (net.ErrClosed), when the
// other end closes (io.EOF), and when data comes.
func TestMemConnWaitingReadWakes(t *testing.T) {
	read := func(c net.Conn) chan error {
		done := make(chan error, 1)
		go func() {
			buf := make([]byte, 4)
			n, err := c.Read(buf)
			if err == nil && string(buf[:n]) != "data" {
				err = errors.New("read " + string(buf[:n]))
			}
			done <- err
		}()
		return done
	}
	a, b := memConnPair()
	waiting := read(a)
	if _, err := b.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil {
		t.Errorf("a read waiting for data: %v", err)
	}
	waiting = read(a)
	b.Close()
	if err := <-waiting; err != io.EOF {
		t.Errorf("a read waiting when the other end closed: %v, want io.EOF", err)
	}
	a.Close()

	a, b = memConnPair()
	defer b.Close()
	waiting = read(a)
	a.Close()
	if err := <-waiting; !errors.Is(err, net.ErrClosed) {
		t.Errorf("a read waiting when its end closed: %v, want net.ErrClosed", err)
	}
}

// Deadlines: a passed one fails reads and writes with a timeout, data
// waiting or not; a read waiting under a future one times out; a new
// deadline applies to a read already waiting; a cleared one lets reads and
// writes go on.
func TestMemConnDeadlines(t *testing.T) {
	a, b := memConnPair()
	defer a.Close()
	defer b.Close()
	if _, err := b.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second)
	if err := a.SetDeadline(past); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(make([]byte, 8)); !isTimeout(err) {
		t.Errorf("read past the deadline: %v, want a timeout", err)
	}
	if _, err := a.Write([]byte("x")); !isTimeout(err) {
		t.Errorf("write past the deadline: %v, want a timeout", err)
	}
	if err := a.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, a, 6); string(got) != "queued" {
		t.Errorf("read after the deadline was cleared: %q", got)
	}
	if _, err := a.Write([]byte("x")); err != nil {
		t.Errorf("write after the deadline was cleared: %v", err)
	}

	if err := a.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(make([]byte, 8)); !isTimeout(err) {
		t.Errorf("a read waiting past its deadline: %v, want a timeout", err)
	}

	// A read waits with no deadline; a deadline set later ends it, whether
	// it comes before the read waits or after.
	if err := a.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 8))
		done <- err
	}()
	if err := a.SetReadDeadline(past); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !isTimeout(err) {
		t.Errorf("a waiting read given a passed deadline: %v, want a timeout", err)
	}
}

// Writers and readers on both ends at once: every byte arrives once. Run
// with the race detector, this checks the locking.
func TestMemConnConcurrentUse(t *testing.T) {
	a, b := memConnPair()
	defer a.Close()
	defer b.Close()
	const writers, writes, size = 4, 200, 1000
	var wg sync.WaitGroup
	for _, c := range []net.Conn{a, b} {
		for w := range writers {
			wg.Go(func() {
				msg := bytes.Repeat([]byte{byte(w)}, size)
				for range writes {
					if _, err := c.Write(msg); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	counts := [2][writers]int{}
	for end, c := range []net.Conn{a, b} {
		var mu sync.Mutex
		left := writers * writes * size
		for range 2 {
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					mu.Lock()
					want := min(left, len(buf))
					left -= want
					mu.Unlock()
					if want == 0 {
						return
					}
					got := buf[:want]
					if _, err := io.ReadFull(c, got); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, v := range got {
						counts[end][v]++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for end := range counts {
		for w, n := range counts[end] {
			if n != writes*size {
				t.Errorf("end %d read %d bytes of writer %d, want %d", end, n, w, writes*size)
			}
		}
	}
}
