package locktest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
)

// CancelStormLeavesNothing: many acquires whose ctx ends at random moments,
// some in the middle of an attempt (its outcome then unknown to the caller),
// on a free and on a held lock. Whatever each returned, once the granted
// leases are unlocked nothing is held and nothing is left but the last
// token, given-up owners' markers and the latches of give-ups one of whose
// tries failed, each with a TTL.
func CancelStormLeavesNothing(t *testing.T, env Env) {
	c := env.client(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []*fairrw.Lease
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*150*time.Microsecond)
			defer cancel()
			mode := fairrw.Write
			if i%3 == 0 {
				mode = fairrw.Read
			}
			l, err := Acquire(cctx, c.RWMutex(name(t)), mode, true)
			switch {
			case err == nil:
				mu.Lock()
				got = append(got, l)
				mu.Unlock()
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("acquire: %v, want a grant or DeadlineExceeded", err)
			}
		}()
	}
	wg.Wait()
	for _, l := range got {
		unlock(t, l)
	}
	// Nothing held: a fresh owner gets the write, as soon as the give-backs
	// that the cancelled calls left to the background are done (on a
	// Redis that answers, within moments).
	soon, cancel := context.WithTimeout(ctx(t), 3*time.Second)
	defer cancel()
	l, err := Acquire(soon, c.RWMutex(name(t)), fairrw.Write, true)
	if err != nil {
		t.Fatalf("write after the cancelled calls: %v", err)
	}
	unlock(t, l)
	eventuallyNoKeysButLatches(t, env, name(t))
}

// eventuallyNoKeysButLatches is EventuallyNoKeys, but for the unlock latches
// of releases (give-ups here) one of whose tries failed: a cancelled
// acquire's short deadline can break the Client's connection under the
// others' commands, and a copy of such a try may still reach Redis within
// the accept window, so its latch is kept that long (fairrw.RWMutex.release)
// instead of deleted. Each must have a TTL within two unlock timeouts.
func eventuallyNoKeysButLatches(t testing.TB, env Env, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, k := range keysOf(t, env, name) {
			if strings.HasPrefix(k, compat.UnlockLatchPrefix+":") {
				pttl, _ := env.Raw.Do(ctx(t), env.Raw.B().Pttl().Key(k).Build()).AsInt64()
				if pttl == -1 || pttl > int64(2*hidden.UnlockTimeout/time.Millisecond) {
					t.Fatalf("%s has PTTL %d, want a TTL within two unlock timeouts", k, pttl)
				}
				continue
			}
			left = append(left, k)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind for %s: %v", name, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// UnlockIgnoresCancelledContext: Unlock runs detached from the caller's
// cancellation, so a request that was cancelled still releases its lock.
//
// The release is confirmed within the Client's grace (hidden.CleanupGrace,
// 20 ms, by default) on a Redis that answers promptly; a machine that
// stalls the test, or a Redis that answers slowly, for about as long shows
// nothing of the library: judged against three controls (the worst
// lateness of a bare 1 ms sleep during the call, a bare script on env.Raw
// beside it, and the Unlock of another hold of the same Client, with a ctx
// that never ends, beside it), such an attempt is made again (miniredis
// under -race on a loaded machine took 27-113 ms for the bare script in
// five attempts in a row; with two copies of the suite side by side, a
// release on a container's Redis took over 20 ms while the other two
// controls stayed under 10, and once an Unlock beside it took 36-361 ms
// in all 20 attempts). Whatever the load, an Unlock that returns unconfirmed
// has waited its grace first, returns ctx's error, and its release goes on
// to free the name. Four such attempts in a row with some control past
// half the grace raise the grace, on a new Client, to four times the worst
// control they saw (at most 2 s): the same wait, judged by the same rule,
// on a machine too loaded for the default. An attempt with every control
// well within the grace should succeed; three that fail fail the test (a
// release that ignores the grace fails every attempt, whatever the grace,
// while one goroutine of a loaded machine can still be held up past it
// while each control, on goroutines of their own, was not: once, with two
// suites side by side, every control at 8 ms), as does running out of 20
// attempts.
func UnlockIgnoresCancelledContext(t *testing.T, env Env) {
	grace := hidden.CleanupGrace
	c := env.client(t)
	clean := 0   // failed attempts during which every control stayed well within the grace
	unclean := 0 // failed attempts in a row, under this grace, with some control past half of it
	var worstSeen time.Duration
	for attempt := 1; ; attempt++ {
		l := lock(t, c.RWMutex(name(t)), fairrw.Write)
		// The same release on the same Client, under no deadline: what a
		// release costs on this Client's connection at this moment.
		twin := lock(t, c.RWMutex(name(t)+":control"), fairrw.Write)
		cctx, cancel := context.WithCancel(context.Background())
		cancel()
		var err error
		// A bare script of the release's size, not a PING: what an
		// in-process server (miniredis) spends on a release is mostly
		// starting its Lua interpreter and compiling the script, which on a
		// loaded machine's share of the CPUs takes far longer than a PING.
		// Run beside the Unlock, on a goroutine of its own as the release
		// is, so that it meets the same moment of the machine and of Redis
		// (run after it, it missed a stall that kept the release past the
		// grace); run every time, so that the control itself is tested.
		var script, release time.Duration
		var scriptErr, releaseErr error
		var controls sync.WaitGroup
		controls.Add(2)
		go func() {
			defer controls.Done()
			start := time.Now()
			scriptErr = env.Raw.Do(ctx(t), env.Raw.B().Eval().Script(bareScript).Numkeys(0).Build()).Error()
			script = time.Since(start)
		}()
		go func() {
			defer controls.Done()
			start := time.Now()
			releaseErr = twin.Unlock(context.Background())
			release = time.Since(start)
		}()
		start := time.Now()
		stall := MachineStall(func() { err = l.Unlock(cctx) })
		took := time.Since(start)
		controls.Wait()
		if scriptErr != nil {
			t.Fatalf("the control script: %v", scriptErr)
		}
		if releaseErr != nil {
			t.Fatalf("the control Unlock: %v", releaseErr)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Unlock with a cancelled ctx: %v, want success or ctx's error", err)
		}
		if took < grace {
			t.Fatalf("Unlock with a cancelled ctx returned unconfirmed after %v, within its grace of %v: %v", took, grace, err)
		}
		worst := max(stall, script, release)
		if worst < grace/2 {
			clean++
		} else {
			unclean++
			worstSeen = max(worstSeen, worst)
		}
		if clean == 3 || attempt == 20 {
			t.Fatalf("Unlock with a cancelled ctx: %v (attempt %d, grace %v, the %s with every control well within the grace; this one: the machine's worst lateness during the call %v, a bare script beside it %v, an Unlock of the same Client beside it %v)",
				err, attempt, grace, ordinal(clean), stall, script, release)
		}
		t.Logf("attempt %d: Unlock with a cancelled ctx: %v, with a grace of %v, the machine %v late, a bare script taking %v and an Unlock beside it %v: again", attempt, err, grace, stall, script, release)
		EventuallyNoKeys(t, env, name(t)) // the release went on in the background
		EventuallyNoKeys(t, env, name(t)+":control")
		if unclean == 4 && grace < 2*time.Second {
			grace = min(max(2*grace, 4*worstSeen), 2*time.Second)
			t.Logf("four attempts in a row with a control past half the grace (the worst %v): again with a grace of %v", worstSeen, grace)
			c = env.client(t, hidden.WithCleanupGrace(grace).(fairrw.Option))
			unclean, worstSeen = 0, 0
		}
		// A loaded machine stalls in stretches (20 attempts in a row
		// stalled, with two suites side by side): the attempts are
		// spread out, 50 ms more apart each time, up to a second.
		time.Sleep(min(time.Duration(attempt)*50*time.Millisecond, time.Second))
	}
	EventuallyNoKeys(t, env, name(t)+":control")
	unlock(t, granted(t, c.RWMutex(name(t)), fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// bareScript is the fair release's library (lua/common.lua and
// lua/fair_lib.lua) inside a function never called, then "return 1": a
// script that costs a server what compiling the release costs, and does
// nothing (run, the library's top level reads the release's ARGV).
var bareScript = "local function library()\n" + lua.Compose("common", "fair_lib") + "\nend\nreturn 1"

// MachineStall runs f and returns the worst lateness, meanwhile, of a bare
// 1 ms sleep on another goroutine: how long the machine kept a goroutine
// that was due to run from running.
func MachineStall(f func()) time.Duration {
	stop := make(chan struct{})
	worst := make(chan time.Duration, 1)
	go func() {
		var w time.Duration
		for {
			select {
			case <-stop:
				worst <- w
				return
			default:
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			if late := time.Since(start) - time.Millisecond; late > w {
				w = late
			}
		}
	}()
	f()
	close(stop)
	return <-worst
}

// ordinal names the n-th (1 to 3) of the clean attempts that failed.
func ordinal(n int) string {
	switch n {
	case 0:
		return "last attempt, none"
	case 1:
		return "first"
	case 2:
		return "second"
	}
	return "third"
}
