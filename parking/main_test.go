package parking_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (servers, the watch, held connections'
// hand-backs) has ended when the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
