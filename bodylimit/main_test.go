package bodylimit

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (the guarded handlers of uploads) has ended
// when the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
