package sessions_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (the resumer, store clients) has ended when
// the tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
