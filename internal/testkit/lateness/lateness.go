// Package lateness is the control of the tests' wall-clock bounds: what a
// loaded machine, and a Redis server scheduled late on it, add to any wait
// at a moment, measured beside the test (docs/testing.md).
package lateness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Control is the control of a test's wall-clock bounds: while the test
// runs, a goroutine waits on bare contexts with short deadlines
// (<-ctx.Done(), nothing else) and keeps how late the worst of them was
// seen. That is what the machine adds to any wait at that moment: on an
// idle machine a few milliseconds, under load (CPU burners, another suite
// beside this one) a few hundred. A bound on how late a call returns (after
// its ctx's deadline, a Shutdown's, a lease's) is checked against its
// allowance plus the control's worst lateness of the same test: the
// library's own overrun must stay within the allowance, whatever the load.
type Control struct {
	stop chan struct{}
	done chan struct{}
	// beside counts the bare waits started by Beside still running.
	beside sync.WaitGroup

	// watchers counts the Redis controls started by WatchRedis.
	watchers sync.WaitGroup

	Mu      sync.Mutex
	worst   time.Duration
	samples int
	checks  []latenessCheck
	// stalls are the control waits that ran late by stallRecorded or
	// more, and redisStalls the Redis controls' round trips that took as
	// long, with when: a bound on a stretch of time (a waiter's wait) asks
	// what the machine and Redis did in that stretch, not over the whole
	// test. Kept apart: the liveness check asks for Redis's every 50 ms,
	// under the oracle's lock, and the bare waits' are many more under load.
	stalls, redisStalls []Stall
	// pinging is when the Redis controls' round trips still in flight
	// began, by server: a server stalled now shows before its PING returns.
	pinging map[string]time.Time
}

// A Stall is a stretch of time in which a control was held up: a bare
// wait that fired late (From its deadline, To when it fired), or a PING
// to a Redis server that took long to answer (From its send, To its
// answer).
type Stall struct {
	From, To time.Time
	// Redis is the server's address for a PING, "" for a bare wait.
	Redis string
}

// stallRecorded is the least delay a Stall is recorded for: an idle
// machine's lateness is a few milliseconds, and a bound cares about
// hundreds.
const stallRecorded = 20 * time.Millisecond

// redisControlEvery is how often a Redis control sends its PING.
const redisControlEvery = 20 * time.Millisecond

// latenessCheck is one bound recorded by within.
type latenessCheck struct {
	what      string
	late      time.Duration
	allowance time.Duration
	waits     int // the waits on a timer the bounded call makes, one after another
}

// Start starts the control for t; the checks recorded with Within
// are judged when t ends (a failed one fails t with the figures).
func Start(t testing.TB) *Control {
	t.Helper()
	l := newControl()
	t.Cleanup(func() { l.judge(t) })
	return l
}

// newControl starts a control's samplers.
func newControl() *Control {
	l := &Control{stop: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for k := range latenessSamplers {
		wg.Go(func() { l.run(k) })
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

// latenessSamplers is how many goroutines sample the machine's lateness: a
// test runs many goroutines at once (200 acquires), and a single sampler
// sees too little of the scheduling delay they meet.
const latenessSamplers = 8

// run waits on bare deadlines of 5 to 20 ms until stopped, keeping the
// worst lateness; k staggers the samplers' deadlines.
func (l *Control) run(k int) {
	for i := k; ; i++ {
		d := time.Duration(5+i%4*5) * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), d)
		start := time.Now()
		select {
		case <-ctx.Done():
			late := time.Since(start) - d
			cancel()
			l.sample(late)
			l.stalled(Stall{From: start.Add(d), To: start.Add(d + late)})
		case <-l.stop:
			cancel()
			return
		}
	}
}

// Beside starts a control call with a ctx of timeout d on a goroutine of
// its own, now, and counts how late after d it returned in the control:
// wait is a bare call that returns when its ctx ends (nil: <-ctx.Done(),
// nothing else). A test that starts many calls at once (200 acquires on a
// frozen Redis) calls it beside each, with a bare Redis call of the same
// client library: the control then waits under the same concurrency and
// does the same work to return (a rueidis call ended by its ctx), so that
// what the machine takes to run that many goroutines due at one instant,
// on a share of loaded CPUs, is not counted against fairrw; what fairrw
// adds is.
func (l *Control) Beside(d time.Duration, wait func(ctx context.Context)) {
	if wait == nil {
		wait = func(ctx context.Context) { <-ctx.Done() }
	}
	l.beside.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	start := time.Now()
	go func() {
		defer l.beside.Done()
		defer cancel()
		wait(ctx)
		late := time.Since(start) - d
		l.sample(late)
		l.stalled(Stall{From: start.Add(d), To: start.Add(d + late)})
	}()
}

// WatchRedis starts a Redis control beside the bare waits: until the
// test ends, a bare PING to the server at addr every 20 ms, on a client of
// its own named name (a test that kills connections by name spares its
// admin's), whose round trips that took stallRecorded or more are kept as
// Stalls of that server. A redis-server is a process like the test's: on
// a loaded machine (a second suite beside this one) it is scheduled late
// too, and then every call to it is late by as much while the test's own
// goroutines, and so the bare waits, run on time.
func (l *Control) WatchRedis(t testing.TB, addr, name string) {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ClientName: name})
	if err != nil {
		t.Fatalf("lateness: Redis control for %s: %v", addr, err)
	}
	l.watch(c, addr, true)
}

// WatchClient is WatchRedis over c, a client of the test's (one of a
// cluster's nodes answers each PING), its Stalls labelled label. c is
// not closed.
func (l *Control) WatchClient(c rueidis.Client, label string) {
	l.watch(c, label, false)
}

// watch sends a PING to c every redisControlEvery until the control stops,
// closing c then when owned.
func (l *Control) watch(c rueidis.Client, addr string, owned bool) {
	l.watchers.Add(1)
	go func() {
		defer l.watchers.Done()
		if owned {
			defer c.Close()
		}
		tick := time.NewTicker(redisControlEvery)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			l.Mu.Lock()
			if l.pinging == nil {
				l.pinging = map[string]time.Time{}
			}
			l.pinging[addr] = start
			l.Mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = c.Do(ctx, c.B().Ping().Build()).Error()
			cancel()
			end := time.Now()
			l.Mu.Lock()
			delete(l.pinging, addr)
			l.Mu.Unlock()
			l.stalled(Stall{From: start, To: end, Redis: addr})
		}
	}()
}

// stalled keeps s if it lasted stallRecorded or more.
func (l *Control) stalled(s Stall) {
	if s.To.Sub(s.From) < stallRecorded {
		return
	}
	l.Mu.Lock()
	defer l.Mu.Unlock()
	if s.Redis != "" {
		l.redisStalls = append(l.redisStalls, s)
	} else {
		l.stalls = append(l.stalls, s)
	}
}

// WorstStall returns the longest Stall of a Redis control (redis true) or
// of the bare waits (false) that overlaps [from, to], a PING still in
// flight at to included: what Redis, or the machine, added to a call
// made in that stretch.
func (l *Control) WorstStall(from, to time.Time, redis bool) time.Duration {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	var worst time.Duration
	stalls := l.stalls
	if redis {
		stalls = l.redisStalls
	}
	for _, s := range stalls {
		if s.From.Before(to) && s.To.After(from) {
			worst = max(worst, s.To.Sub(s.From))
		}
	}
	if redis {
		for _, began := range l.pinging {
			if began.Before(to) {
				worst = max(worst, to.Sub(began))
			}
		}
	}
	return worst
}

// sample counts one bare wait that fired late.
func (l *Control) sample(late time.Duration) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.samples++
	if late > l.worst {
		l.worst = late
	}
}

// Worst returns the control's worst lateness so far: what the machine
// has added to a wait since the test began.
func (l *Control) Worst() time.Duration {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.worst
}

// within records a bound: what returned late after its deadline (or took
// late beyond what it may take), and the library's allowance for it. The
// bound holds when late is at most allowance plus the control's worst
// lateness over the test; judged when the test ends.
func (l *Control) Within(what string, late, allowance time.Duration) {
	l.WithinWaits(what, late, allowance, 1)
}

// WithinWaits is Within for a call that, once its deadline has passed,
// waits on a timer waits times one after another before it returns (an
// acquire that noticed its ctx's end, then gives its attempt back for the
// library's cleanup grace): each of those can be held up as much as a
// bare wait of the control, so the bound is allowance plus waits times the
// control's worst lateness.
func (l *Control) WithinWaits(what string, late, allowance time.Duration, waits int) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	l.checks = append(l.checks, latenessCheck{what: what, late: late, allowance: allowance, waits: max(waits, 1)})
}

// judge stops the control and fails t for every check past its allowance
// plus the control's worst lateness.
func (l *Control) judge(t testing.TB) {
	t.Helper()
	v := l.stopAndJudge()
	for _, e := range v.errs {
		t.Errorf("%s", e)
	}
	for _, m := range v.logs {
		t.Logf("%s", m)
	}
}

// A verdict is what a stopped control found: the checks past their
// allowance (errs), the figures (logs), the control's worst lateness and
// the least allowance of the checks that failed.
type verdict struct {
	errs, logs []string
	worst      time.Duration
	// leastFailed is the least allowance among the failed checks.
	leastFailed time.Duration
}

// stopAndJudge stops the control, once it has a sample, and judges its
// checks.
func (l *Control) stopAndJudge() verdict {
	// A test that ends within a sampler's first deadline (a call that
	// failed at once) has no sample yet: it waits for one, for as long as
	// a loaded machine may take to fire a 5 ms timer.
	for wait := time.Now(); time.Since(wait) < 5*time.Second; time.Sleep(time.Millisecond) {
		l.Mu.Lock()
		n := l.samples
		l.Mu.Unlock()
		if n > 0 {
			break
		}
	}
	close(l.stop)
	<-l.done
	l.beside.Wait()
	l.watchers.Wait()
	l.Mu.Lock()
	defer l.Mu.Unlock()
	var v verdict
	v.worst = l.worst
	if l.samples == 0 {
		v.errs = append(v.errs, "lateness control: no sample taken")
		return v
	}
	failed := 0
	var worstCheck time.Duration
	for _, c := range l.checks {
		if c.late > worstCheck {
			worstCheck = c.late
		}
		if c.late > c.allowance+time.Duration(c.waits)*l.worst {
			failed++
			if failed == 1 || c.allowance < v.leastFailed {
				v.leastFailed = c.allowance
			}
			if failed <= 20 {
				times := ""
				if c.waits > 1 {
					times = fmt.Sprintf("%d times ", c.waits)
				}
				v.errs = append(v.errs, fmt.Sprintf("%s: %v late, past its allowance %v plus %sthe machine's lateness %v (the control's worst of %d bare ctx waits)",
					c.what, c.late.Round(time.Millisecond), c.allowance, times, l.worst.Round(time.Millisecond), l.samples))
			}
		}
	}
	if failed > 20 {
		v.errs = append(v.errs, fmt.Sprintf("... and %d more checks past their allowance", failed-20))
	}
	if len(l.checks) > 0 {
		v.logs = append(v.logs, fmt.Sprintf("lateness: %d checks, the latest %v; the control's worst lateness %v over %d samples",
			len(l.checks), worstCheck.Round(time.Millisecond), l.worst.Round(time.Millisecond), l.samples))
	}
	var redisWorst time.Duration
	for _, s := range l.redisStalls {
		redisWorst = max(redisWorst, s.To.Sub(s.From))
	}
	if len(l.redisStalls) > 0 {
		v.logs = append(v.logs, fmt.Sprintf("lateness: the Redis controls' PINGs took %v or more %d times, the worst %v", stallRecorded, len(l.redisStalls), redisWorst.Round(time.Millisecond)))
	}
	return v
}

// Tries runs try, a part of t whose wall-clock bounds are judged by the
// Control it is given, up to tries times: a try whose bounds failed while
// the machine itself ran a bare wait later than the allowance of a
// failed check cannot tell the library's overrun from the machine's at
// that allowance, and is made again. The last try's bounds must hold,
// whatever the machine did. try's other checks fail t as usual, on any
// try.
func Tries(t testing.TB, tries int, try func(n int, ctl *Control)) {
	t.Helper()
	for n := 1; ; n++ {
		ctl := newControl()
		try(n, ctl)
		v := ctl.stopAndJudge()
		for _, m := range v.logs {
			t.Logf("try %d: %s", n, m)
		}
		if len(v.errs) == 0 {
			return
		}
		if n < tries && v.worst > v.leastFailed {
			t.Logf("try %d: %d bounds failed while the machine ran a bare wait %v late, past their allowance %v: trying again; the first: %s",
				n, len(v.errs), v.worst.Round(time.Millisecond), v.leastFailed, v.errs[0])
			continue
		}
		for _, e := range v.errs {
			t.Errorf("try %d: %s", n, e)
		}
		return
	}
}
