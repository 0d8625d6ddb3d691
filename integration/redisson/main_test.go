// Package redisson tests the Redisson policy's wire format and interoperation
// with Java clients: the keys and hashes Redisson reads, renewals, and the
// Mutex.
package redisson

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
