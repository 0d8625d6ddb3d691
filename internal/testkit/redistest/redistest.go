// Package redistest provides Redis servers for tests: a real redis-server
// process, an address from the environment, or an in-process miniredis. (A
// Redis in a container is in integration/internal/container, so that this
// module does not depend on testcontainers.)
//
// It is imported by _test.go files only. Functions take a testing.TB and tie
// every resource they create to it with Cleanup: processes are killed and
// waited for and clients closed, so callers running
// go.uber.org/goleak see no leftover goroutines.
//
// Environment:
//
//	FAIRRW_REDIS_ADDR      use this host:port instead of starting a server (Start only)
//	FAIRRW_REDIS_CLUSTER   comma-separated seeds of a Redis Cluster to use instead of
//	                       starting one (StartCluster only; the fault tests always
//	                       start their own)
//	FAIRRW_REQUIRE_REDIS=1 fail, instead of skip, when no Redis can be provided
package redistest

import (
	"os"
	"sync"
	"testing"
)

// Kinds of Redis.
const (
	KindProcess   = "process"   // redis-server started by this package
	KindEnv       = "env"       // FAIRRW_REDIS_ADDR
	KindContainer = "container" // integration/internal/container
)

// Environment variables read by this package.
const (
	EnvAddr         = "FAIRRW_REDIS_ADDR"
	EnvRequireRedis = "FAIRRW_REQUIRE_REDIS"
)

// Redis is a running Redis that a test can use.
type Redis struct {
	Addr string // host:port
	Kind string // "process", "env", "container"

	// Kind "process".
	mu      sync.Mutex
	bin     string   // redis-server executable
	args    []string // complete argument list (including --port)
	dir     string   // working directory (--dir)
	logPath string   // stdout+stderr of every run, appended
	proc    *process // nil while stopped
	paused  bool
	// unhold closes the socket that holds the port of a server stopped by
	// Stop or Kill until it starts again (nil: nothing held).
	unhold func()
}

// requireRedis reports whether FAIRRW_REQUIRE_REDIS=1.
func requireRedis() bool { return os.Getenv(EnvRequireRedis) == "1" }

// unavailable skips the test, or fails it when required is set.
func unavailable(tb testing.TB, required bool, envName, format string, args ...any) {
	tb.Helper()
	if required {
		tb.Fatalf("redistest: "+format+" (%s=1, so this is an error instead of a skip)", append(args, envName)...)
	}
	tb.Skipf("redistest: "+format+" (set %s=1 to make this an error)", append(args, envName)...)
}
