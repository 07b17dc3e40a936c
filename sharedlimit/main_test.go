package sharedlimit

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close and Done leave no goroutine behind: the
// monitor, the subscriber and every lease's renewal end with them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
