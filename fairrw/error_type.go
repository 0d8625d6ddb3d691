package fairrw

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/redis/rueidis"
)

// errKind classifies an error for telemetry: the error.type attribute of
// spans and metrics, the outcome of an acquire, and the status description
// of a span. Each kind stands for a sentinel error (or a context's), so its
// values are few and stable; they never carry a lock name or an address.
type errKind uint8

const (
	kindNone           errKind = iota // no error
	kindNotAcquired                   // ErrNotAcquired: an answer, not a failure
	kindDeadline                      // the caller's ctx passed its deadline
	kindCanceled                      // the caller's ctx was cancelled
	kindUnavailable                   // ErrUnavailable: Redis could not be reached, or broke the connection
	kindRedisTimeout                  // ErrUnavailable: Redis did not answer in time
	kindPermission                    // ErrPermission
	kindClosed                        // ErrClosed: Close or Shutdown
	kindPolicyMismatch                // ErrPolicyMismatch
	kindNotReplicated                 // ErrNotReplicated
	kindClockSkew                     // ErrClockSkew
	kindInvalidName                   // ErrInvalidName
	kindInvalidOption                 // ErrInvalidOption
	kindNotHeld                       // ErrNotHeld
	kindLeaseLost                     // ErrLeaseLost
	kindRedis                         // an error answered by Redis that fairrw does not interpret
	kindOther                         // anything else
	errKinds
)

// kindInfo is what telemetry shows of a kind: error.type, the acquire
// outcome it makes, the exception.type of a span's exception event and the
// status description of a failed span (a sentinel's text: no name in it).
type kindInfo struct {
	errorType, outcome, exception, status string
}

// Acquire outcomes: kindInfo.outcome of the call's error kind.
const (
	outcomeGranted     = "granted"
	outcomeNotAcquired = "not_acquired" // TryLock or TryRLock found it held
	outcomeCancelled   = "cancelled"    // the caller's ctx ended: a lock-wait timeout, or a cancelled call
	outcomeUnavailable = "unavailable"  // Redis could not be reached, or did not answer in time
	outcomeClosed      = "closed"       // Close or Shutdown: no failure
	outcomeError       = "error"
)

var kinds = [errKinds]kindInfo{
	kindNone:           {"", outcomeGranted, "", ""},
	kindNotAcquired:    {"not_acquired", outcomeNotAcquired, "fairrw.ErrNotAcquired", ErrNotAcquired.Error()},
	kindDeadline:       {"deadline_exceeded", outcomeCancelled, "context.DeadlineExceeded", context.DeadlineExceeded.Error()},
	kindCanceled:       {"canceled", outcomeCancelled, "context.Canceled", context.Canceled.Error()},
	kindUnavailable:    {"unavailable", outcomeUnavailable, "fairrw.ErrUnavailable", ErrUnavailable.Error()},
	kindRedisTimeout:   {"redis_timeout", outcomeUnavailable, "fairrw.ErrUnavailable", errRedisTimeout.Error()},
	kindPermission:     {"permission", outcomeError, "fairrw.ErrPermission", ErrPermission.Error()},
	kindClosed:         {"closed", outcomeClosed, "fairrw.ErrClosed", ErrClosed.Error()},
	kindPolicyMismatch: {"policy_mismatch", outcomeError, "fairrw.ErrPolicyMismatch", ErrPolicyMismatch.Error()},
	kindNotReplicated:  {"not_replicated", outcomeError, "fairrw.ErrNotReplicated", ErrNotReplicated.Error()},
	kindClockSkew:      {"clock_skew", outcomeError, "fairrw.ErrClockSkew", ErrClockSkew.Error()},
	kindInvalidName:    {"invalid_name", outcomeError, "fairrw.ErrInvalidName", ErrInvalidName.Error()},
	kindInvalidOption:  {"invalid_option", outcomeError, "fairrw.ErrInvalidOption", ErrInvalidOption.Error()},
	kindNotHeld:        {"not_held", outcomeError, "fairrw.ErrNotHeld", ErrNotHeld.Error()},
	kindLeaseLost:      {"lease_lost", outcomeError, "fairrw.ErrLeaseLost", ErrLeaseLost.Error()},
	kindRedis:          {"redis_error", outcomeError, "rueidis.RedisError", "fairrw: error answered by Redis"},
	kindOther:          {"_OTHER", outcomeError, "_OTHER", "fairrw: error"},
}

func (k errKind) info() *kindInfo { return &kinds[k] }

// errRedisTimeout is a call whose ctx ended while Redis had not answered it
// for slowAnswer or more, or a try that got no answer within its retry
// window (errNoAnswer wraps it): a Redis too slow, or frozen, not a lock
// held too long.
var errRedisTimeout = tag("fairrw: Redis did not answer in time", ErrUnavailable)

// slowAnswer is how long a Redis call must have gone unanswered, when its
// ctx ends, to count as a timeout talking to Redis rather than a ctx that
// ended during an ordinary round trip: a lock wait whose ctx ends during
// one of its attempts is still a lock wait. Redis answers a lock's script
// in well under a millisecond; a hundred is an outage or a stall.
const slowAnswer = 100 * time.Millisecond

// kindOf classifies err. The order matters where an error matches several
// sentinels: an unavailable Redis wraps the ctx's error too, and so does a
// closed Client's lease.
func kindOf(err error) errKind {
	switch {
	case err == nil:
		return kindNone
	case errors.Is(err, errRedisTimeout):
		return kindRedisTimeout
	case errors.Is(err, ErrUnavailable):
		return kindUnavailable
	case errors.Is(err, ErrPermission):
		return kindPermission
	case errors.Is(err, ErrClosed):
		return kindClosed
	case errors.Is(err, ErrNotAcquired):
		return kindNotAcquired
	case errors.Is(err, context.DeadlineExceeded):
		return kindDeadline
	case errors.Is(err, context.Canceled):
		return kindCanceled
	case errors.Is(err, ErrPolicyMismatch):
		return kindPolicyMismatch
	case errors.Is(err, ErrNotReplicated):
		return kindNotReplicated
	case errors.Is(err, ErrClockSkew):
		return kindClockSkew
	case errors.Is(err, ErrInvalidName):
		return kindInvalidName
	case errors.Is(err, ErrInvalidOption):
		return kindInvalidOption
	case errors.Is(err, ErrNotHeld):
		return kindNotHeld
	case errors.Is(err, ErrLeaseLost):
		return kindLeaseLost
	}
	if rerr, ok := redisErrOf(err); ok {
		if redisOut(rerr) {
			return kindUnavailable
		}
		return kindRedis
	}
	if noConnection(err) {
		if timedOut(err) {
			return kindRedisTimeout
		}
		return kindUnavailable
	}
	return kindOther
}

// noConnection reports whether err is a Redis call's failure for want of
// a working connection: refused, reset, closed, not resolved, timed out at
// the socket, or rueidis giving up a connection. Redis's own answers, the
// caller's ctx and fairrw's refusals are not.
func noConnection(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := redisErrOf(err); ok {
		return false
	}
	for _, sentinel := range []error{ErrPermission, ErrPolicyMismatch, ErrNotReplicated, ErrClockSkew, ErrInvalidName, ErrInvalidOption, ErrNotHeld, ErrLeaseLost, ErrClosed, ErrNotAcquired} {
		if errors.Is(err, sentinel) {
			return false
		}
	}
	return true
}

// redisDown reports whether the outcome err of one Redis call says that
// Redis cannot be used now (see noConnection, redisOut).
func redisDown(err error) bool {
	if rerr, ok := redisErrOf(err); ok {
		return redisOut(rerr)
	}
	return noConnection(err)
}

// redisErrOf returns the error Redis answered that err is or wraps.
func redisErrOf(err error) (*rueidis.RedisError, bool) {
	var rerr *rueidis.RedisError
	if !errors.As(err, &rerr) {
		return nil, false
	}
	return rueidis.IsRedisErr(rerr) // not a nil reply
}

// timedOut reports whether err is a timeout: a deadline of a ctx, of a
// connection, or one the network reports.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
