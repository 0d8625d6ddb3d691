package fairrwtest

import "errors"

// errNoRedisServer is wrapped, with exec.ErrNotFound, by StartRedisServer's
// error when no redis-server executable is on PATH; NewRedisServer then
// skips the test, or fails it when FAIRRW_REQUIRE_REDIS=1.
var errNoRedisServer = errors.New("fairrwtest: redis-server is not on PATH")

// errServerClosed is reported by a Server's NewClient once the Server is
// closed.
var errServerClosed = errors.New("fairrwtest: server closed")

// envRequireRedis names the environment variable that, set to 1, makes
// NewRedisServer fail a test instead of skipping it when redis-server is
// not installed: CI sets it so that integration tests cannot pass unrun.
const envRequireRedis = "FAIRRW_REQUIRE_REDIS"
