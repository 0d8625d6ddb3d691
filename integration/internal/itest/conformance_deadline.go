package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// confOverrunBound is the overrun the test fails: far above the library's
// goal (50ms), so that a loaded machine running with -race does not trip it.
const confOverrunBound = time.Second

// confCtx is a call's context as the harness made it.
type confCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
	desc   string // for the op's description: ", deadline 30ms"
	// fromRun: derived from the workload's ctx, which ends with it.
	fromRun bool
	// implied is the end the library promises without a ctx that ends (an
	// Unlock bounded by the unlock timeout); zero when none.
	implied time.Time

	Mu        sync.Mutex
	cancelled time.Time // when the harness's timer cancelled it (zero: not)
}

// cancelledAt returns when the harness's timer cancelled the ctx.
func (cc *confCtx) cancelledAt() time.Time {
	cc.Mu.Lock()
	defer cc.Mu.Unlock()
	return cc.cancelled
}

// plainCtx is a ctx with a generous timeout, that no call is expected to
// reach.
func (e *confEnv) plainCtx(parent context.Context, timeout time.Duration) *confCtx {
	ctx, cancel := context.WithTimeout(parent, timeout)
	return &confCtx{ctx: ctx, cancel: cancel, fromRun: parent == e.runCtx}
}

// deadlineCtx is a ctx with a deadline d from now.
func (e *confEnv) deadlineCtx(parent context.Context, d time.Duration) *confCtx {
	ctx, cancel := context.WithDeadline(parent, time.Now().Add(d))
	return &confCtx{ctx: ctx, cancel: cancel, fromRun: parent == e.runCtx, desc: fmt.Sprintf(", deadline %v", d.Round(time.Millisecond))}
}

// cancelCtx is a ctx with a generous timeout that the harness cancels
// after d.
func (e *confEnv) cancelCtx(parent context.Context, timeout, d time.Duration) *confCtx {
	ctx, cancel := context.WithTimeout(parent, timeout)
	cc := &confCtx{fromRun: parent == e.runCtx, desc: fmt.Sprintf(", cancelled after %v", d.Round(time.Millisecond))}
	t := time.AfterFunc(d, func() {
		cc.Mu.Lock()
		cc.cancelled = time.Now()
		cc.Mu.Unlock()
		cancel()
	})
	cc.ctx, cc.cancel = ctx, func() { t.Stop(); cancel() }
	return cc
}

// confDeadlineIn draws a deadline: mostly a few ms to a few hundred, now
// and then past a second.
func confDeadlineIn(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	// Skewed towards short: the square of a uniform draw.
	u := rng.Float64()
	return lo + time.Duration(u*u*float64(hi-lo))
}

// acquireCtx is a first acquire's context: cancelled when the workload
// ends, after 12s at the latest; for 25% of the waiting acquires a
// deadline of 5ms-1.5s (mostly short: it ends mid-wait, or mid-attempt in
// a freeze), for 12% a cancellation after 20-720ms; for 25% of the
// TryLocks a deadline of 1-100ms. A lease under 20ms (which a slow round
// trip may never let be granted) always gets a deadline of 20-400ms.
func (e *confEnv) acquireCtx(rng *rand.Rand, wait bool, lk confLeaseKind) *confCtx {
	switch r := rng.IntN(100); {
	case lk.tiny():
		return e.deadlineCtx(e.runCtx, 20*time.Millisecond+time.Duration(rng.Int64N(int64(380*time.Millisecond))))
	case wait && r < 25:
		return e.deadlineCtx(e.runCtx, confDeadlineIn(rng, 5*time.Millisecond, 1500*time.Millisecond))
	case wait && r < 37:
		return e.cancelCtx(e.runCtx, 12*time.Second, 20*time.Millisecond+time.Duration(rng.Int64N(int64(700*time.Millisecond))))
	case !wait && r < 25:
		return e.deadlineCtx(e.runCtx, confDeadlineIn(rng, time.Millisecond, 100*time.Millisecond))
	}
	return e.plainCtx(e.runCtx, 12*time.Second)
}

// shortOr is, for pct% of the calls, a deadline of lo-hi, else a plain
// timeout.
func (e *confEnv) shortOr(rng *rand.Rand, parent context.Context, pct int, lo, hi, timeout time.Duration) *confCtx {
	if rng.IntN(100) < pct {
		return e.deadlineCtx(parent, confDeadlineIn(rng, lo, hi))
	}
	return e.plainCtx(parent, timeout)
}

// unlockCtx is an Unlock's context: for 40% a deadline of 1-300ms (it
// ends mid-release now and then, or in a freeze: Unlock returns ctx's
// error and the release goes on in the background), for 10% a
// cancellation after 1-100ms, else context.Background(): one try bounded
// by the unlock timeout.
func (e *confEnv) unlockCtx(rng *rand.Rand) *confCtx {
	switch r := rng.IntN(100); {
	case r < 40:
		return e.deadlineCtx(context.Background(), confDeadlineIn(rng, time.Millisecond, 300*time.Millisecond))
	case r < 50:
		return e.cancelCtx(context.Background(), time.Minute, time.Millisecond+time.Duration(rng.Int64N(int64(100*time.Millisecond))))
	}
	return &confCtx{ctx: context.Background(), cancel: func() {}, implied: time.Now().Add(confUnlockTimeout)}
}

// confOverrun is the overrun figure of one kind of call.
type confOverrun struct {
	Calls, ended int // calls made; calls whose ctx ended before they returned
	late50       int // ... returned more than 50ms after it ended
	worst        time.Duration
	worstOp      string
	frozen       int // calls past their ctx's end that met a freeze or pause of Redis
	frozenWorst  time.Duration
	okAfter      int            // granted (or released) though returned after the ctx ended
	errs         map[string]int // the errors of the calls past their ctx's end
}

// callReturned records a call of kind (Lock, Unlock, ...) made with cc in
// [start, ret], which returned err: how long after its ctx ended it
// returned. An overrun past confOverrunBound (and past the machine's
// lateness, when the oracle has a control) is a violation.
func (o *confOracle) callReturned(kind string, cc *confCtx, start, ret time.Time, err error, op string) {
	end, why := time.Time{}, ""
	if dl, ok := cc.ctx.Deadline(); ok && ret.After(dl) {
		end, why = dl, "deadline"
	}
	if c := cc.cancelledAt(); !c.IsZero() && ret.After(c) && (end.IsZero() || c.Before(end)) {
		end, why = c, "cancellation"
	}
	o.Mu.Lock()
	defer o.Mu.Unlock()
	if r := o.runEnded; cc.fromRun && !r.IsZero() && ret.After(r) && (end.IsZero() || r.Before(end)) {
		end, why = r, "end of the workload"
	}
	if end.IsZero() && !cc.implied.IsZero() && ret.After(cc.implied) {
		end, why = cc.implied, "unlock timeout"
		kind += "(no deadline)"
	}
	// A call made after its ctx ended (a worker the machine, or the
	// test's own locks, held up between making its ctx and calling: a
	// TryLock called 1.9 s after its deadline, with two suites side by
	// side) owes a prompt return, counted from its call.
	if !end.IsZero() && start.After(end) {
		end, why = start, why+", which ended before the call began,"
	}
	s := o.overruns[kind]
	if s == nil {
		s = &confOverrun{errs: map[string]int{}}
		o.overruns[kind] = s
	}
	s.Calls++
	if end.IsZero() {
		return
	}
	over := ret.Sub(end)
	s.ended++
	if over > 50*time.Millisecond {
		s.late50++
	}
	if err == nil {
		s.okAfter++
	}
	s.errs[confErrKind(err)]++
	if over > s.worst {
		s.worst, s.worstOp = over, fmt.Sprintf("%s at %s", op, o.At(start))
	}
	if o.faults.overlaps(start, ret, "pause", "freeze") {
		s.frozen++
		s.frozenWorst = max(s.frozenWorst, over)
	}
	if over > confOverrunBound {
		what := fmt.Sprintf("conformance: deadline/overrun: %s called %s returned %s (%s) after its ctx's %s at %s",
			op, o.At(start), o.At(ret), confErrKind(err), why, o.At(end))
		if o.ctl == nil {
			o.violateLocked("deadline/overrun", "", ret, "%s: %v (bound %v)", what, over.Round(time.Millisecond), confOverrunBound)
		} else {
			o.ctl.WithinWaits(what, over, confOverrunBound, confWaitsAfterEnd(kind))
		}
	}
}

// confWaitsAfterEnd is how many timers a call of kind waits on, one after
// another, once its ctx has ended: every call notices the end (one); an
// acquire (Lock, RLock, TryLock, a further hold) then gives back an
// attempt that may have been granted, waiting for its answer up to the
// library's cleanup grace (fairrw's giveBack, restate) before it returns
// (two). With two suites side by side the control's bare waits ran 1.5 s
// late at worst, and cancelled Locks returned 2.3 to 3.3 s late.
func confWaitsAfterEnd(kind string) int {
	if strings.Contains(kind, "Lock") { // not Unlock, ForceUnlock
		return 2
	}
	return 1
}

// overrunReport formats the overrun figures, one call kind a line.
func (o *confOracle) overrunReport() string {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	kinds := make([]string, 0, len(o.overruns))
	for k := range o.overruns {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		s := o.overruns[k]
		fmt.Fprintf(&b, "\n      %-22s calls=%d past-ctx-end=%d worst=%v >50ms=%d in-freeze=%d (worst %v) ok-after-end=%d errs[%s]",
			k, s.Calls, s.ended, s.worst.Round(100*time.Microsecond), s.late50, s.frozen, s.frozenWorst.Round(100*time.Microsecond), s.okAfter, confSorted(s.errs))
		if s.worstOp != "" {
			fmt.Fprintf(&b, " worst: %s", s.worstOp)
		}
	}
	return b.String()
}

// overrunTotals returns the calls past their ctx's end and, of those,
// the ones that met a freeze.
func (o *confOracle) overrunTotals() (ended, frozen int, worst time.Duration) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	for _, s := range o.overruns {
		ended += s.ended
		frozen += s.frozen
		worst = max(worst, s.worst)
	}
	return ended, frozen, worst
}
