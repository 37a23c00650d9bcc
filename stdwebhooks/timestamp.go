package stdwebhooks

import (
	"strconv"
	"time"
)

// maxTimestampDigits bounds a signed timestamp: unix seconds. It also admits
// milliseconds, which then fail the tolerance, and cannot overflow.
const maxTimestampDigits = 18

// ParseTimestamp reads unix seconds written as plain decimal digits. Signs,
// spaces and exponents are refused: the text as sent is part of what was
// signed, and they would let one instant be written, and signed, in many
// ways. Every scheme that signs a timestamp (Standard Webhooks, Stripe,
// Slack) reads it so.
func ParseTimestamp(s string) (int64, bool) {
	if s == "" || len(s) > maxTimestampDigits {
		return 0, false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// WithinTolerance reports whether unix (from ParseTimestamp) is no more than
// toleranceSeconds from now, either way. Both times are below 10^18, so
// nothing overflows.
func WithinTolerance(unix int64, now time.Time, toleranceSeconds int64) bool {
	diff := now.Unix() - unix
	return diff >= -toleranceSeconds && diff <= toleranceSeconds
}
