package store_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (servers, fan-in readers, streams, clients)
// has ended when the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
