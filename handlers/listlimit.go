package handlers

import (
	"github.com/taskhook/taskhook/api/wire"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// listLimiter bounds how often one principal may list on this replica. A
// list is the one read whose work grows with what a tenant holds (it
// examines up to 1,000 index entries and loads up to 100 records), so a
// tenant listing in a tight loop would take the replica's CPU and Redis time
// from everybody else; past its rate it gets 429 rate_limited with
// Retry-After. Other routes are not limited here.
type listLimiter struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	byWho map[string]*rate.Limiter
}

// maxListLimiters bounds the principals remembered; past it, the idle ones
// are forgotten (a forgotten principal starts with a full burst again).
const maxListLimiters = 10000

func newListLimiter(perSecond float64, burst int) *listLimiter {
	return &listLimiter{rate: rate.Limit(perSecond), burst: burst, byWho: map[string]*rate.Limiter{}}
}

// wait reports how long the principal must wait before its next list; 0
// means it may list now (and the list is counted).
func (l *listLimiter) wait(who string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.byWho[who]
	if !ok {
		if len(l.byWho) >= maxListLimiters {
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
func (l *listLimiter) forgetIdle(now time.Time) {
	for who, lim := range l.byWho {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.byWho, who)
		}
	}
	if len(l.byWho) >= maxListLimiters {
		clear(l.byWho)
	}
}

// limitLists wraps a list route.
func (a *api) limitLists(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.lists != nil {
			if d := a.lists.wait(principal(r).ID, time.Now()); d > 0 {
				secs := strconv.Itoa(int(math.Ceil(d.Seconds())))
				writeAPIError(w, &APIError{Status: http.StatusTooManyRequests, Code: wire.CodeRateLimited,
					Message: "too many lists from this principal; retry later", RetryAfter: secs})
				return
			}
		}
		next(w, r)
	}
}
