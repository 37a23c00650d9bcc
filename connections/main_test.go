package connections_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (store clients, the fake provider's server
// and the connections to it) has ended when the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
