package waits_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (a parked waiter's steps, its timers) has
// ended when the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
