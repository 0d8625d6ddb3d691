// Package readshare tests shared reads (one Redis hold for a Client's
// readers): phases, writers waiting, losses, and races with renewal, unlock,
// pauses and Shutdown.
package readshare

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
