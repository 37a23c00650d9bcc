package mcp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the tests start (held answers, streams, the parked
// watches of the in-memory backend) has ended when they are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
