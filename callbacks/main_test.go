package callbacks

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the tests start (test endpoints, the Sender's connections)
// has ended when they are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
