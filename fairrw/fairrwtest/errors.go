package fairrwtest

import "errors"

// ErrNoRedisServer is returned by StartRedisServer when no redis-server
// executable is on PATH; NewRedisServer then skips the test, or fails it
// when FAIRRW_REQUIRE_REDIS=1.
var ErrNoRedisServer = errors.New("fairrwtest: redis-server is not on PATH")

// ErrServerClosed is returned by a Server's methods, and reported by its
// NewClient, once the Server is closed.
var ErrServerClosed = errors.New("fairrwtest: server closed")

// EnvRequireRedis names the environment variable that, set to 1, makes
// NewRedisServer fail a test instead of skipping it when redis-server is
// not installed: CI sets it so that integration tests cannot pass unrun.
const EnvRequireRedis = "FAIRRW_REQUIRE_REDIS"
