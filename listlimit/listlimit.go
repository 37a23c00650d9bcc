// Package listlimit bounds how often one principal may list on this
// replica. A list is the one read whose work grows with what a tenant holds
// (it examines up to 1,000 index entries and loads up to 100 records), so a
// tenant listing in a tight loop would take the replica's CPU and Redis time
// from everybody else; past its rate a face refuses the list, saying how
// long to wait. Other reads are not limited here.
//
// It imports no package of the project: never store, a service or a face.
package listlimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is the rate each principal may list at, with the bucket of each
// principal it has seen.
type Limiter struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	byWho map[string]*rate.Limiter
}

// maxPrincipals bounds the principals remembered; past it, the idle ones
// are forgotten (a forgotten principal starts with a full burst again).
const maxPrincipals = 10000

// New makes a Limiter of perSecond lists a second, in bursts of burst.
func New(perSecond float64, burst int) *Limiter {
	return &Limiter{rate: rate.Limit(perSecond), burst: burst, byWho: map[string]*rate.Limiter{}}
}

// Wait reports how long the principal who must wait before its next list;
// 0 means it may list now (and the list is counted).
func (l *Limiter) Wait(who string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byWho[who]
	if !ok {
		if len(l.byWho) >= maxPrincipals {
			l.forgetIdle(now)
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.byWho[who] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// forgetIdle drops the principals whose bucket is full again (idle for a
// whole burst: forgetting them changes nothing), or every one when none is.
func (l *Limiter) forgetIdle(now time.Time) {
	for who, lim := range l.byWho {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.byWho, who)
		}
	}
	if len(l.byWho) >= maxPrincipals {
		clear(l.byWho)
	}
}
