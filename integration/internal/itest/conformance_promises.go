package itest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/history"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const (
	// confTakeUpSlack is how much of a lease granted on release the
	// take-up's round trip may use with no fault around.
	confTakeUpSlack = 300 * time.Millisecond
	// confOrderGap is how much earlier a call must begin than another for
	// its first attempt to be known to reach Redis first (and the lead a
	// reader's call must have on the end of the write it waits for).
	confOrderGap = 250 * time.Millisecond
	// confSyncedLead is confOrderGap for a writer of a Client under
	// WithSyncReplicas: rueidis sends its attempt and the WAIT behind it on
	// a dedicated connection, dialed (handshake and all) when none is idle,
	// so that a later call that finds one idle can reach Redis first (CI
	// runs beside other work saw a writer overtaken by one called 841 ms
	// after it, no fault near).
	confSyncedLead = 1500 * time.Millisecond
	// confRedisSlack allows for Redis's whole-millisecond clock, comparing
	// what Inspect read with a Deadline: the grant's clock is floored (up
	// to 1ms lost), Inspect's PTTL may read a millisecond later than its
	// TIME (1ms more), and the key lives through its last millisecond, so
	// a hold kept LeaseMargin past Deadline reads as 3ms past at least.
	confRedisSlack = 3500 * time.Microsecond
)

// confLeaseFigures are the lease-length figures.
type confLeaseFigures struct {
	explicit, watchdog      int
	onRelease, releaseQuiet int
	tiny                    int           // grants of leases under 20ms
	worstShort              time.Duration // Lock return + d - Deadline, over every WithLease grant
	worstShortRelease       time.Duration // ... granted on release
	worstShortQuiet         time.Duration // ... granted on release, no fault around
	minLeft                 time.Duration // Deadline - return, least over grants on release with d >= 100ms (0: none)

	kept            int           // holds whose Redis end Inspect read
	keptMinPast     time.Duration // least (Redis end - Deadline)
	keptBounded     int           // single WithLease holds of a fair policy checked for an upper bound
	keptMaxOverPlus time.Duration // most (Redis end - (return + d)) of those
}

// checkLeaseLocked checks the Deadline of the new grant h (selfD, read at
// now) against the lease it asked for.
func (o *confOracle) checkLeaseLocked(h *confHold, selfD, now time.Time) {
	f := &o.leases
	if h.Quorum {
		if h.asked > 0 {
			f.explicit++
		} else {
			f.watchdog++
		}
		if h.asked > 0 && !selfD.IsZero() && selfD.After(h.granted.Add(h.asked)) {
			o.violateLocked("lease/longer-than-asked", h.Name, now, "%s: quorum Deadline %s is %v after the call returned at %s, more than the lease %v asked",
				h, o.At(selfD), selfD.Sub(h.granted), o.At(h.granted), h.asked)
		}
		return
	}
	if h.asked == 0 {
		f.watchdog++
		// A write passed within its cohort, or a read sharing its
		// Client's read hold, carries on the hold's Deadline, which had
		// at least a third of the lease left at the pass or the share.
		least := confLeaseTime
		if h.wokenBy == "cohort" || h.wokenBy == "share" {
			least = confLeaseTime / 3
		}
		if selfD.Before(h.callStart.Add(least)) {
			o.violateLocked("lease/counted-before-call", h.Name, now, "%s: watchdog Deadline %s is %v after the call began at %s, less than the lease time %v",
				h, o.At(selfD), selfD.Sub(h.callStart), o.At(h.callStart), confLeaseTime)
		}
		if selfD.After(now.Add(confLeaseTime)) {
			o.violateLocked("lease/longer-than-asked", h.Name, now, "%s: watchdog Deadline %s is more than the lease time %v after now %s",
				h, o.At(selfD), confLeaseTime, o.At(now))
		}
		return
	}
	f.explicit++
	if h.asked < 20*time.Millisecond {
		f.tiny++
	}
	if selfD.After(h.granted.Add(h.asked)) {
		o.violateLocked("lease/longer-than-asked", h.Name, now, "%s: Deadline %s is %v after the call returned at %s, more than the lease %v asked",
			h, o.At(selfD), selfD.Sub(h.granted), o.At(h.granted), h.asked)
	}
	if selfD.Before(h.callStart.Add(h.asked)) {
		o.violateLocked("lease/counted-before-call", h.Name, now, "%s: Deadline %s is %v after the call began at %s, less than the lease %v asked: counted from before the call",
			h, o.At(selfD), selfD.Sub(h.callStart), o.At(h.callStart), h.asked)
	}
	short := h.granted.Add(h.asked).Sub(selfD)
	f.worstShort = max(f.worstShort, short)
	if h.wokenBy != "grant" && h.wokenBy != "reply" {
		return
	}
	f.onRelease++
	f.worstShortRelease = max(f.worstShortRelease, short)
	if left := selfD.Sub(h.granted); h.asked >= 100*time.Millisecond && (f.minLeft == 0 || left < f.minLeft) {
		f.minLeft = left
	}
	if !o.quietLocked(h.callStart.Add(-500*time.Millisecond), h.granted) || (h.gen != nil && !h.gen.stopBegan.IsZero()) {
		return
	}
	f.releaseQuiet++
	f.worstShortQuiet = max(f.worstShortQuiet, short)
	// The take-up is one round trip, sent when the lease counts from
	// (selfD - asked): the slack, plus what the machine added to a wait
	// and Redis to a call in that stretch (the controls' worst; 322 ms
	// against a 300 ms slack with two suites side by side).
	slack := confTakeUpSlack
	if o.ctl != nil {
		slack += o.ctl.Worst() + o.ctl.WorstStall(selfD.Add(-h.asked), h.granted, true)
	}
	if short > slack {
		o.violateLocked("lease/short-after-grant-on-release", h.Name, now, "%s, granted on release (woken by %q), returned at %s with Deadline %s: only %v of the %v asked left, %v short, with no fault around (slack %v with the controls' stalls): the lease was not counted from the grant",
			h, h.wokenBy, o.At(h.granted), o.At(selfD), selfD.Sub(h.granted).Round(time.Millisecond), h.asked, short.Round(time.Millisecond), slack)
	}
}

// checkSyncLocked: a first hold granted under WithSyncReplicas is never
// returned while the replica is cut off if it was made in the cut (a
// write token minted after the cut began, or a call begun after it): the
// replica could not acknowledge it.
func (o *confOracle) checkSyncLocked(h *confHold, now time.Time) {
	if !h.synced || h.parent != 0 {
		return
	}
	for _, c := range o.faults.cutsCopy() {
		if h.granted.Before(c.start) || (!c.end.IsZero() && !h.granted.Before(c.end)) {
			continue
		}
		byCall := h.callStart.After(c.start)
		byToken := h.mode == fairrw.Write && h.token > uint64(c.start.UnixMicro())
		if !byCall && !byToken {
			o.Stats["sync grants returned in a cut, made before it"]++
			continue
		}
		end := "still cut"
		if !c.end.IsZero() {
			end = "resumed " + o.At(c.end)
		}
		o.violateLocked("sync/granted-while-cut", h.Name, now, "%s under WithSyncReplicas (call began %s, token %d) returned at %s, granted while the replica was stopped (cut %s, %s): no replica could acknowledge it; want ErrNotReplicated%s",
			h, o.At(h.callStart), h.token, o.At(h.granted), o.At(c.start), end, o.syncDiagLocked(h, c))
	}
}

// syncOutcome counts the outcomes of the synced first acquires whose call
// met a cut of the replica.
func (o *confOracle) syncOutcome(start, ret time.Time, err error) {
	for _, c := range o.faults.cutsCopy() {
		if ret.Before(c.start) || (!c.end.IsZero() && start.After(c.end)) {
			continue
		}
		inside := start.After(c.start) && (c.end.IsZero() || ret.Before(c.end))
		where := "met"
		if inside {
			where = "inside"
		}
		o.count(fmt.Sprintf("sync acquires %s a cut -> %s", where, confErrKind(err)), 1)
		return
	}
	if err == nil {
		o.count("sync acquires outside cuts -> ok", 1)
	}
}

// confForce is one ForceUnlock call.
type confForce struct {
	Name       string
	start, ret time.Time // ret zero while in progress
	Err        error
}

// forceBegins records a ForceUnlock of name under way: every hold of the
// name may be released by it from now on (the other mode's too: under
// the Redisson formats the write's reads go with it).
func (o *confOracle) forceBegins(name string) *confForce {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	f := &confForce{Name: name, start: now}
	o.forces[name] = append(o.forces[name], f)
	o.inflight[name]++
	for _, h := range o.live[name] {
		o.forceLocked(h, now)
	}
	o.eventLocked(name, now, "ForceUnlock begins")
	return f
}

func (o *confOracle) forceEnds(f *confForce, err error) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	f.ret, f.Err = now, err
	o.inflight[f.Name]--
	o.lastActive[f.Name] = now
	o.eventLocked(f.Name, now, "ForceUnlock -> %s", confErrKind(err))
}

func (o *confOracle) forceLocked(h *confHold, now time.Time) {
	if h.forced.IsZero() {
		h.forced = now
	}
	if h.unlockBegan.IsZero() {
		h.unlockBegan = now
	}
}

// forceWindowEndLocked is until when f may still free a hold in Redis:
// while under way; a second after it returned; or, when a fault (a
// freeze, a killed connection) met it, 1.5s after the last such fault.
func (o *confOracle) forceWindowEndLocked(f *confForce) time.Time {
	never := o.start.Add(24 * time.Hour)
	if f.ret.IsZero() {
		return never
	}
	end := f.ret.Add(time.Second)
	fe, ongoing := o.faults.lastEndOverlapping(f.start, f.ret)
	if ongoing {
		return never
	}
	if x := fe.Add(1500 * time.Millisecond); x.After(end) {
		end = x
	}
	return end
}

// markForcedAtGrantLocked marks h forced if its call began while a
// ForceUnlock of its name could still land: it may have been released
// before it even returned. Reports whether it was.
func (o *confOracle) markForcedAtGrantLocked(h *confHold, now time.Time) bool {
	for _, f := range o.forces[h.Name] {
		if h.callStart.Before(o.forceWindowEndLocked(f)) {
			o.forceLocked(h, now)
			return true
		}
	}
	return false
}

// forceBeforeLocked returns when the latest ForceUnlock of h's name that
// began before h's grant, and could still land when h's call began,
// began (zero: none).
func (o *confOracle) forceBeforeLocked(h *confHold) time.Time {
	var at time.Time
	for _, f := range o.forces[h.Name] {
		if f.start.Before(h.granted) && h.callStart.Before(o.forceWindowEndLocked(f)) && f.start.After(at) {
			at = f.start
		}
	}
	return at
}

// confPassAfterForce is how long past a third of the lease after a
// ForceUnlock a cohort may still pass its hold on: the renewal that finds
// the hold gone is due a third of the lease after the last, and takes a
// round trip.
const confPassAfterForce = 200 * time.Millisecond

// forceUnlock is a ForceUnlock of name, in a random mode, from a direct
// Client (a proxy's late copy would free a later holder: ForceUnlock is
// not idempotent), with a deadline now and then.
func (e *confEnv) forceUnlock(rng *rand.Rand, name string) {
	direct := []int{0, len(e.slots) - 1}
	gen := e.gen(direct[rng.IntN(len(direct))])
	mode := fairrw.Write
	if e.tg.Kind == ConfRWKind && rng.IntN(100) < 40 {
		mode = fairrw.Read
	}
	cc := e.shortOr(rng, context.Background(), 50, 2*time.Millisecond, 300*time.Millisecond, 2*time.Second)
	defer cc.cancel()
	op := fmt.Sprintf("%s ForceUnlock(%s%s)", gen.label, mode, cc.desc)
	f := e.o.forceBegins(name)
	start := time.Now()
	var err error
	if e.tg.Kind == ConfMutexKind {
		err = gen.Client.Mutex(name).ForceUnlock(cc.ctx)
	} else {
		err = gen.Client.RWMutex(name).ForceUnlock(cc.ctx, mode)
	}
	ret := time.Now()
	e.o.forceEnds(f, err)
	e.o.callReturned("ForceUnlock", cc, start, ret, err, op)
	e.o.count("force-unlocks -> "+confErrKind(err), 1)
	e.o.count("ops", 1)
}

// quietLocked: no fault in progress at any moment of [from, to] (an
// armed drop counts from when it fired).
func (o *confOracle) quietLocked(from, to time.Time) bool { return !o.faults.firedWithin(from, to) }

// confPlaceStall is the stall that may cost a waiter its place: its queue
// entry lives a lease (confLeaseTime) and it refreshes it every third of
// one, so a refresh held up by two thirds of a lease, by the machine and
// Redis together, finds it gone; docs/policies.md promises the place only
// to a waiter that keeps refreshing. Half that slack in either control
// alone is taken as such a stall.
const confPlaceStall = confLeaseTime / 3

// steadyLocked: quietLocked, and neither the machine nor a Redis server
// stalled for confPlaceStall or more in [from, to] (the lateness
// control's bare waits, its Redis controls' PINGs): a wait whose order the
// policy promises.
func (o *confOracle) steadyLocked(from, to time.Time) bool {
	if !o.quietLocked(from, to) {
		return false
	}
	if o.ctl == nil {
		return true
	}
	stall := max(o.ctl.WorstStall(from, to, false), o.ctl.WorstStall(from, to, true))
	if stall >= confPlaceStall {
		o.Stats["order: holds not judged for order, the machine or Redis stalled a third of a lease in their wait"]++
		return false
	}
	return true
}

// endsAfterLocked is a lower bound on the end in Redis of h's hold: its
// Unlock call (or a ForceUnlock), its Deadline (Redis keeps it past that),
// its end seen, its Client's stop.
func (o *confOracle) endsAfterLocked(h *confHold) time.Time {
	end := h.lease.Deadline()
	for _, t := range []time.Time{h.unlockBegan, h.ended} {
		if !t.IsZero() && t.Before(end) {
			end = t
		}
	}
	if h.gen != nil && !h.gen.stopBegan.IsZero() && h.gen.stopBegan.Before(end) {
		end = h.gen.stopBegan
	}
	return end
}

// orderChecks runs, at the end, the fair policies' order checks over the
// first holds granted: FIFO among writers (fair), and PhaseFair's readers
// before the next writer (phaseFair).
func (o *confOracle) orderChecks(fair, phaseFair bool) {
	if !fair {
		return
	}
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	// An owner's write ends in Redis with its first hold's release unless
	// it took further writes.
	byLabel := map[string]*confHold{}
	// writes are judged by FIFO; phases are every write, those its Client's
	// cohort passed included: a PhaseFair reader waits through no write of
	// a cohort granted after its Client knew of it (confOrderGap covers
	// its attempt's way to Redis and the push that tells the cohort).
	var writes, phases []history.WriteGrant
	var reads []history.WaitingRead
	for _, h := range o.tops {
		if h.Quorum {
			continue
		}
		label := fmt.Sprintf("#%d", h.id)
		byLabel[label] = h
		stopped := h.gen != nil && !h.gen.stopBegan.IsZero() && !h.gen.stopBegan.After(h.granted)
		quiet := o.steadyLocked(h.callStart.Add(-500*time.Millisecond), h.granted)
		if h.mode == fairrw.Write {
			w := history.WriteGrant{Owner: label, Lock: h.Name, Call: h.callStart, Return: h.granted, Token: h.token,
				KeepsPlace: h.waits && (h.asked == 0 || h.asked >= time.Second) && quiet && !stopped}
			if h.synced {
				w.Lead = confSyncedLead
			}
			if !o.furtherWrite[h.Owner] {
				w.EndsAfter = o.endsAfterLocked(h)
			}
			phases = append(phases, w)
			if h.inCohort(true) {
				o.Stats["order: cohort writes, not judged by FIFO (see the cohort bound)"]++
				continue
			}
			writes = append(writes, w)
			continue
		}
		// A reader whose hold outlasts its return: a lease longer than any
		// quiet round trip, not cut short by its Client's stop or a
		// ForceUnlock before its return.
		if phaseFair && h.waits && (h.asked == 0 || h.asked >= 500*time.Millisecond) && quiet &&
			(h.gen == nil || h.gen.stopBegan.IsZero() || h.gen.stopBegan.After(h.granted)) &&
			(h.forced.IsZero() || h.forced.After(h.granted)) {
			reads = append(reads, history.WaitingRead{Owner: label, Lock: h.Name, Call: h.callStart, Return: h.granted})
		}
	}
	// How many judgements the checks made.
	pairs := 0
	for _, a := range writes {
		if !a.KeepsPlace {
			continue
		}
		for _, b := range writes {
			if b.Lock == a.Lock && b.Call.Sub(a.Call) >= max(confOrderGap, a.Lead) {
				pairs++
			}
		}
	}
	o.Stats["order: FIFO writer pairs judged"] += pairs
	describe := func(v history.Violation) string {
		var b strings.Builder
		b.WriteString(v.Detail)
		for _, op := range v.Ops {
			if h := byLabel[op.Owner]; h != nil {
				fmt.Fprintf(&b, "\n      %s: %s token %d call %s returned %s deadline %s woken %q ended %s", op.Owner, h, h.token,
					o.At(h.callStart), o.At(h.granted), o.At(h.lease.Deadline()), h.wokenBy, o.At(h.ended))
			}
		}
		return b.String()
	}
	for _, v := range history.CheckWriterFIFO(writes, confOrderGap) {
		name := ""
		if len(v.Ops) > 0 {
			name = v.Ops[0].Lock
		}
		o.violateLocked("order/fifo", name, now, "%s", describe(v))
	}
	o.cohortBoundLocked(now)
	if !phaseFair {
		return
	}
	judged := 0
	for _, r := range reads {
		for _, w := range phases {
			if w.Lock == r.Lock && !w.EndsAfter.IsZero() && w.EndsAfter.Before(r.Return) && !w.EndsAfter.Before(r.Call.Add(confOrderGap)) {
				judged++
				break
			}
		}
	}
	o.Stats["order: phase-fair reads eligible"] += len(reads)
	o.Stats["order: phase-fair reads judged (a write ended in their wait)"] += judged
	for _, v := range history.CheckPhaseFairAdmission(phases, reads, confOrderGap) {
		name := ""
		if len(v.Ops) > 0 {
			name = v.Ops[0].Lock
		}
		o.violateLocked("order/phase-fair", name, now, "%s", describe(v))
	}
}

// confCohortYield is how many holds a Client's cohort passes on at most
// once it knows, or cannot rule out, that a writer outside it waits
// (fairrw's cohortYield).
const confCohortYield = 2

// cohortBoundLocked checks the bound of cohorts: a write that queued in
// Redis on its own (a Lock outside any cohort: WithLease, say, of any
// Client, its own included) waits, for each Client's cohort, for at most
// confCohortYield+1 of its holds granted once the cohort knew of the write:
// should the cohort's next leader have queued just before it, its grant,
// then at most confCohortYield passes; a cohort that knew of it while it
// held passes at most confCohortYield times. Judged for the writes whose
// wait met no fault, counting the cohort holds granted from confOrderGap
// after the write's call (its attempt has reached Redis, and client
// tracking's push the cohort's Client, by then) to its grant.
func (o *confOracle) cohortBoundLocked(now time.Time) {
	const bound = confCohortYield + 1
	judged, worst := 0, 0
	for _, h := range o.tops {
		if h.Quorum || h.mode != fairrw.Write || !h.waits || h.inCohort(true) || h.gen == nil ||
			!o.steadyLocked(h.callStart.Add(-500*time.Millisecond), h.granted) {
			continue
		}
		judged++
		per := map[*confGen]int{}
		known := h.callStart.Add(confOrderGap)
		for _, e := range o.tops {
			if e.gen != nil && e.Name == h.Name && e.inCohort(true) && e.granted.After(known) && e.granted.Before(h.granted) {
				per[e.gen]++
			}
		}
		for g, n := range per {
			worst = max(worst, n)
			if n > bound {
				o.violateLocked("order/cohort-bound", h.Name, now, "%s (call %s, granted %s) waited for %d cohort holds of %s, more than %d",
					h, o.At(h.callStart), o.At(h.granted), n, g.label, bound)
			}
		}
	}
	o.Stats["order: writes outside cohorts judged for the cohort bound"] += judged
	o.Stats["order: most cohort holds of one other Client during such a wait"] = max(o.Stats["order: most cohort holds of one other Client during such a wait"], worst)
}

// checkKeptLocked compares what Redis keeps of a hold believed held
// throughout an Inspect (its holder x, read at info.Time) with its
// Deadline as read before the Inspect (before) and the lease it asked for.
func (o *confOracle) checkKeptLocked(h *confHold, x fairrw.HolderInfo, info *fairrw.LockInfo, before time.Time, fair bool, desc string, now time.Time) {
	if x.Remaining < 0 {
		return
	}
	f := &o.leases
	end := info.Time.Add(x.Remaining)
	past := end.Sub(before)
	if f.kept == 0 || past < f.keptMinPast {
		f.keptMinPast = past
	}
	f.kept++
	if past < hidden.LeaseMargin-confRedisSlack {
		o.violateLocked("redis/kept-short", h.Name, now, "%s: Redis keeps %s (token %d, granted %s) until %s, %v after its Deadline %s: want at least LeaseMargin %v",
			desc, h, h.token, o.At(h.granted), o.At(end), past, o.At(before), hidden.LeaseMargin)
	}
	if !fair || !h.single || h.asked == 0 || !o.quietLocked(h.callStart.Add(-2*time.Second), now) {
		return
	}
	over := end.Sub(h.granted.Add(h.asked))
	f.keptBounded++
	f.keptMaxOverPlus = max(f.keptMaxOverPlus, over)
	if over > hidden.LeaseMargin+confRedisSlack {
		o.violateLocked("redis/kept-long", h.Name, now, "%s: Redis keeps %s (lease %v, call began %s, returned %s, woken by %q, synced %v, Deadline %s) until %s, %v after the return plus the lease: want at most LeaseMargin %v",
			desc, h, h.asked, o.At(h.callStart), o.At(h.granted), h.wokenBy, h.synced, o.At(before), o.At(end), over, hidden.LeaseMargin)
	}
}

// leaseReport formats the lease, Redis and order figures.
func (o *confOracle) leaseReport() string {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	f := o.leases
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	return fmt.Sprintf("grants with WithLease=%d (under 20ms: %d) watchdog=%d; return+d-Deadline worst: all %s, granted on release (n=%d) %s, of those with no fault (n=%d) %s (slack %v); least Deadline-return of a grant on release of d>=100ms: %s; Redis end-Deadline least %s over %d inspected holds; Redis end-(return+d) most %s over %d single WithLease holds",
		f.explicit, f.tiny, f.watchdog, ms(f.worstShort), f.onRelease, ms(f.worstShortRelease), f.releaseQuiet, ms(f.worstShortQuiet), confTakeUpSlack,
		ms(f.minLeft), ms(f.keptMinPast), f.kept, ms(f.keptMaxOverPlus), f.keptBounded)
}

// unlockCtxChecks: an Unlock that returned ctx's error ended the lease at
// once (Done closed, Err wrapping ErrLeaseLost): the release goes on in
// the background.
func (e *confEnv) unlockCtxChecks(h *confHold, cc *confCtx, err error, doneAtRet bool) {
	if err == nil || cc.ctx.Err() == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return
	}
	e.o.count("unlocks returned ctx's error", 1)
	if !doneAtRet {
		e.o.violate("unlock/alive-after-ctx-error", h.Name, "Unlock of %s returned ctx's error (%v) but the lease was not Done when it returned: it must end, the release going on in the background", h, err)
	}
	if lerr := h.lease.Err(); !errors.Is(lerr, fairrw.ErrLeaseLost) {
		e.o.violate("unlock/err-after-ctx-error", h.Name, "Unlock of %s returned ctx's error (%v); the lease's Err is %v, want ErrLeaseLost", h, err, lerr)
	}
}

// confStartReplica starts a replica of primary and waits until it
// acknowledges writes.
func confStartReplica(t *testing.T, primary *redistest.Redis, admin rueidis.Client) *redistest.Redis {
	t.Helper()
	host, port, _ := strings.Cut(primary.Addr, ":")
	replica := redistest.StartProcess(t, "--replicaof", host, port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := admin.Do(ctx, admin.B().Wait().Numreplicas(1).Timeout(100).Build()).AsInt64()
		cancel()
		if err == nil && n >= 1 {
			return replica
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica of %s never acknowledged (%d, %v)", primary.Addr, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
