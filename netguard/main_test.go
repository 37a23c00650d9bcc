package netguard

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the tests start (the listeners dialled through the guard)
// has ended when they are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
