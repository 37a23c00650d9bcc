package handlers

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/taskhook/taskhook/api/wire"
)

// limitLists wraps a list route: past the principal's rate (listlimit) it is
// answered 429 rate_limited, with Retry-After in whole seconds.
func (a *api) limitLists(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.lists != nil {
			if d := a.lists.Wait(principal(r).ID, time.Now()); d > 0 {
				secs := strconv.Itoa(int(math.Ceil(d.Seconds())))
				writeAPIError(w, &APIError{Status: http.StatusTooManyRequests, Code: wire.CodeRateLimited,
					Message: "too many lists from this principal; retry later", RetryAfter: secs})
				return
			}
		}
		next(w, r)
	}
}
