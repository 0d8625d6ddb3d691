package locktest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
)

// watchStalls starts the control of a scenario whose holds must outlive
// their watchdog's renewals (lateness.Control): bare waits, and beside
// them a bare PING to the scenario's Redis every 20 ms. A renewal round is
// a call to that Redis from a goroutine of the test's process; when either
// control could not run for a renew interval, the rounds could not either,
// and a watchdog lease lost then says nothing of the library (two CPU
// burners beside six test packages kept a container's Redis from
// confirming 2 s leases, in the middle of FurtherHoldsEach).
//
// The option it returns, given to the scenario's Client, adds a PING every
// 20 ms through that Client's own rueidis client (WithRedisWrapper): its
// renewal rounds wait behind whatever that client pipelines on its
// connections, which a PING on a connection of its own does not (an
// in-process miniredis under -race, serving the parallel cases of a
// package, answered the control's PINGs within 231 ms while the Client's
// rounds came too late to keep 2 s leases).
func watchStalls(t testing.TB, raw rueidis.Client) (stallOf, fairrw.Option) {
	l := lateness.Start(t)
	l.WatchClient(raw, "locktest")
	var mu sync.Mutex
	n := 0
	opt := fairrw.WithRedisWrapper(func(rdb rueidis.Client) rueidis.Client {
		mu.Lock()
		n++
		label := fmt.Sprintf("locktest client %d", n)
		mu.Unlock()
		l.WatchClient(rdb, label)
		return rdb
	})
	return func(from, to time.Time) time.Duration {
		return max(l.WorstStall(from, to, true), l.WorstStall(from, to, false))
	}, opt
}

// A stallOf returns the longest stall of the machine or of Redis that
// overlapped [from, to].
type stallOf func(from, to time.Time) time.Duration

// stallTries is how many times a case runs at most when each try failed
// during a stall of the machine or of Redis.
const stallTries = 3

// retried runs body, a case whose holds must outlive renewal rounds of
// interval, and runs it again (up to stallTries in all) when it failed
// while the control saw the machine or Redis stall for interval or more: a
// lease the watchdog could not renew then was lost by the machine, not by
// the library. A failure with no such stall fails t at once, and so does
// the last try's, with what the control saw. cleanup undoes a failed try
// (its holds are left in Redis for their leases otherwise). Each try gets
// its number, for a name of its own.
func (w stallOf) retried(t testing.TB, interval time.Duration, body func(tb testing.TB, try int), cleanup func(try int)) {
	t.Helper()
	for try := 1; ; try++ {
		start := time.Now()
		failure := runSoft(t, func(tb testing.TB) { body(tb, try) })
		if failure == "" {
			return
		}
		stall := w(start, time.Now())
		if stall < interval || try == stallTries {
			t.Fatalf("try %d of %d: %s (the control's worst stall meanwhile: %v; a stall of %v or more is the machine's)",
				try, stallTries, failure, stall.Round(time.Millisecond), interval)
		}
		t.Logf("try %d failed while the machine or Redis stalled %v (a renew interval is %v): %s; trying again",
			try, stall.Round(time.Millisecond), interval, failure)
		cleanup(try)
	}
}

// softTB is a testing.TB whose failures are recorded, not reported: Fatal
// and FailNow end the goroutine of the body runSoft runs.
type softTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (s *softTB) record(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, msg)
}

func (s *softTB) Error(args ...any)                 { s.record(fmt.Sprint(args...)) }
func (s *softTB) Errorf(format string, args ...any) { s.record(fmt.Sprintf(format, args...)) }
func (s *softTB) Fail()                             { s.record("failed") }
func (s *softTB) FailNow()                          { s.record("failed"); runtime.Goexit() }
func (s *softTB) Fatal(args ...any)                 { s.Error(args...); runtime.Goexit() }
func (s *softTB) Fatalf(format string, args ...any) { s.Errorf(format, args...); runtime.Goexit() }
func (s *softTB) Helper()                           {}

func (s *softTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failures) > 0
}

// runSoft runs body on a goroutine of its own with a softTB over t, and
// returns its failures, joined ("" when it passed).
func runSoft(t testing.TB, body func(tb testing.TB)) string {
	s := &softTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(s)
	}()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.failures, "; ")
}
