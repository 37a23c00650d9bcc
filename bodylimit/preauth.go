package bodylimit

import (
	"errors"
	"net/http"
	"net/netip"
	"sync"
)

// Bodies read before a bearer token is verified (the capability routes, a
// Slack interaction, whose signature covers the body) draw on a budget of
// their own, so that clients who hold no credential cannot take the bytes
// of bodies that authenticated requests need; and one client address holds
// at most a share of it, so that one client cannot take all of it either.

// ErrShareFull is a body refused because its client address holds its
// whole share of the pre-auth budget.
var ErrShareFull = errors.New("the client address holds its share of the pre-auth body budget")

// Authenticated moves the body of a request whose credential was verified
// to the main budget, out of its client address's share; once the read of
// the body has begun it changes nothing.
func (g *Guard) Authenticated(r *http.Request) {
	if b, ok := r.Body.(*guardedBody); ok && b.reserved == 0 {
		b.budget, b.shares = g.budget, nil
	}
}

// addressShares counts the pre-auth body bytes each client address holds.
// An address that holds none has no entry.
type addressShares struct {
	most int64 // one address's share
	mu   sync.Mutex
	held map[netip.Prefix]int64
}

// take adds n bytes to what who holds, unless that would pass its share.
func (s *addressShares) take(who netip.Prefix, n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[who]+n > s.most {
		return false
	}
	s.held[who] += n
	return true
}

// give takes n bytes off what who holds.
func (s *addressShares) give(who netip.Prefix, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if left := s.held[who] - n; left > 0 {
		s.held[who] = left
	} else {
		delete(s.held, who)
	}
}

// clientOf is the client a request's RemoteAddr names, as a share is
// counted: an IPv4 address, or the /64 an IPv6 address is in (one host is
// commonly given a whole /64). The peer of the connection is taken as it
// is: no header a client sets (X-Forwarded-For) moves it, so behind a
// proxy every client is the proxy. A RemoteAddr that does not parse (not
// TCP) is counted as one client, the zero prefix.
func clientOf(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Prefix{}
	}
	addr := ap.Addr().Unmap()
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.WithZone("").Prefix(bits)
	return p
}
