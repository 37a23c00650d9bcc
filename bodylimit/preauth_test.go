package bodylimit

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// heldBody is a request body that sends nothing until it is let go, and
// says when it is first read: the read of a guarded body starts only once
// its reservation was granted.
type heldBody struct {
	pr      *io.PipeReader
	pw      *io.PipeWriter
	reading chan struct{}
	once    sync.Once
}

func newHeldBody() *heldBody {
	pr, pw := io.Pipe()
	return &heldBody{pr: pr, pw: pw, reading: make(chan struct{})}
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	return b.pr.Read(p)
}

func (b *heldBody) Close() error { return b.pr.Close() }

// upload is one request read under the guard: reserved once its body is
// being read, or refused with err; done once the guard let it go.
type upload struct {
	body *heldBody
	err  chan error
	done chan struct{}
}

// reserved waits for u either to hold its reservation (true) or to be
// answered (false, with the error).
func (u *upload) reserved(t *testing.T) (bool, error) {
	t.Helper()
	select {
	case <-u.body.reading:
		return true, nil
	case err := <-u.err:
		return false, err
	case <-time.After(time.Minute):
		t.Fatal("an upload neither reserved nor was refused")
		return false, nil
	}
}

// end lets u go and waits for the guard to be done with it.
func (u *upload) end() {
	u.body.pw.CloseWithError(errors.New("let go"))
	<-u.done
}

// The pre-auth body budget holds at most a share per client address (an
// IPv4 address, an IPv6 /64); more from that address is a 429 at once,
// others are not held back, an authenticated body draws on the main budget
// apart, and a share is given back when its bodies are done.
func TestPreauthShareOfOneAddress(t *testing.T) {
	t.Parallel()
	mainGauge, preauthGauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "main"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "preauth"})
	g := New(Limits{Max: 64 << 10, Timeout: time.Minute, Inflight: 1 << 20, Preauth: 512 << 10, PerAddress: 64 << 10},
		mainGauge, preauthGauge)
	start := func(remote string, size int64, authenticated bool) *upload {
		u := &upload{body: newHeldBody(), err: make(chan error, 1), done: make(chan struct{})}
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Body, r.ContentLength, r.RemoteAddr = u.body, size, remote
		h := g.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if authenticated {
				g.Authenticated(r)
			}
			_, err := g.ReadUpTo(r, g.max)
			u.err <- err
		}))
		go func() {
			defer close(u.done)
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
		return u
	}
	var held []*upload
	defer func() {
		for _, u := range held {
			u.end()
		}
	}()
	mustReserve := func(what, remote string, size int64, authenticated bool) *upload {
		t.Helper()
		u := start(remote, size, authenticated)
		if ok, err := u.reserved(t); !ok {
			t.Fatalf("%s: refused: %v", what, err)
		}
		held = append(held, u)
		return u
	}
	mustRefuse := func(what, remote string) {
		t.Helper()
		u := start(remote, 1, false)
		ok, err := u.reserved(t)
		if ok {
			held = append(held, u)
			t.Fatalf("%s: reserved past its address's share", what)
		}
		<-u.done
		// The REST face answers it 429 rate_limited, Retry-After 1.
		if !errors.Is(err, ErrShareFull) {
			t.Fatalf("%s: %v, want ErrShareFull", what, err)
		}
	}

	first := mustReserve("the first half of a share", "192.0.2.1:1001", 32<<10, false)
	mustReserve("the second half, another connection", "192.0.2.1:1002", 32<<10, false)
	mustRefuse("one byte more from the address", "192.0.2.1:1003")
	mustRefuse("the address as IPv4-mapped IPv6", "[::ffff:192.0.2.1]:1004")
	mustReserve("another address", "192.0.2.2:1001", 64<<10, false)
	mustReserve("an IPv6 address", "[2001:db8::1]:1001", 64<<10, false)
	mustRefuse("another address of its /64", "[2001:db8::2]:1001")
	mustReserve("an address of another /64", "[2001:db8:0:1::1]:1001", 64<<10, false)
	mustReserve("an authenticated body from the full address", "192.0.2.1:1005", 64<<10, true)
	if got := testutil.ToFloat64(preauthGauge); got != 256<<10 {
		t.Errorf("pre-auth budget: %v bytes reserved, want %d", got, 256<<10)
	}
	if got := testutil.ToFloat64(mainGauge); got != 64<<10 {
		t.Errorf("main budget: %v bytes reserved, want %d", got, 64<<10)
	}

	first.end()
	held = held[1:]
	mustReserve("the address, once a body of its share is done", "192.0.2.1:1006", 32<<10, false)
	for _, u := range held {
		u.end()
	}
	held = nil
	if pre, main := testutil.ToFloat64(preauthGauge), testutil.ToFloat64(mainGauge); pre != 0 || main != 0 {
		t.Errorf("after every body: %v and %v bytes still reserved", pre, main)
	}
	if len(g.shares.held) != 0 {
		t.Errorf("shares left behind: %v", g.shares.held)
	}
}
