package callbacks

import (
	"math/rand/v2"
	"time"
)

// maxBackoffStep caps one wait between attempts, however many came before.
const maxBackoffStep = time.Hour

// Backoff is how long to wait before retry number attempt (1 for the first
// retry): a uniform draw from [0, base·2^(attempt-1)] ("full jitter", so
// that endpoints that failed together are not retried together), the upper
// bound held at one hour. rnd returns a float in [0, 1); nil means
// math/rand/v2's Float64. Tests pass a fixed one.
//
// With base 15s and 8 retries, the upper bounds are 15s, 30s, 1m, 2m, 4m,
// 8m, 16m and 32m: in the worst case the retries span 15s·(2^8−1), about an
// hour, and about half that on average.
func Backoff(base time.Duration, attempt int, rnd func() float64) time.Duration {
	if base <= 0 {
		return 0
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	return time.Duration(clamp01(rnd()) * float64(backoffCeiling(base, attempt)))
}

// backoffCeiling is base·2^(attempt-1), at most maxBackoffStep. Doubling
// stops at the cap, so no attempt count overflows.
func backoffCeiling(base time.Duration, attempt int) time.Duration {
	ceiling := min(base, maxBackoffStep)
	for i := 1; i < attempt && ceiling < maxBackoffStep; i++ {
		ceiling *= 2
	}
	return min(ceiling, maxBackoffStep)
}

func clamp01(f float64) float64 {
	switch {
	case f > 1: // also keeps a faulty rnd from stretching the wait
		return 1
	case f >= 0:
		return f
	default: // negative or NaN
		return 0
	}
}
