// Package behaviour runs fairrw's behavioural suite on real Redis servers,
// and checks the API's answers to bad input, races of API calls, names,
// wake-ups and what Redis keeps.
package behaviour

import (
	"testing"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestMain runs the package's tests with the harness's checks (goleak, the
// holder child process, -test.parallel).
func TestMain(m *testing.M) { itest.Main(m) }
