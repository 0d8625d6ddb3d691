// Package connect tests connecting: dials stuck or refused, wrong passwords,
// TLS (also with a private CA), a Redis wrapper, the scripts' loading, and
// what telemetry says of a frozen Redis.
package connect

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
