package itest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// confLease is what the oracle needs of a grant: a *fairrw.Lease, of one
// Redis or of a Quorum, has it (and hidden.WokenBy reads it).
type confLease interface {
	Done() <-chan struct{}
	Deadline() time.Time
	Token() uint64
	Err() error
	Unlock(context.Context) error
	Context() context.Context
}

// confHold is one granted Lease as the oracle sees it.
type confHold struct {
	id        int64
	Name      string
	Owner     int64  // the harness's owner: one per top-level acquire, shared by its further holds
	wire      string // Lease.Owner() ("" for a quorum lease)
	mode      fairrw.Mode
	token     uint64
	lease     confLease
	op        string // what granted it
	Client    string
	parent    int64 // the lease a further hold was taken from, 0 for a top-level acquire
	callStart time.Time
	granted   time.Time // when the call returned
	Quorum    bool
	gen       *confGen        // the generation of the Client (or Quorum) that granted it
	ctx       context.Context // its Context, asked for at the grant (nil: not)
	ctxLazy   bool            // its Context is asked for only once it ended
	asked     time.Duration   // the lease asked for with WithLease (0: the watchdog lease)
	single    bool            // its owner's only hold (a new owner on a shared handle)
	waits     bool            // a first hold taken by Lock or RLock (which queue), not TryLock
	wokenBy   string          // Lease.WokenBy: "grant" or "reply" for a grant made on release
	synced    bool            // its Client acquires under WithSyncReplicas

	// Guarded by the oracle's mu.
	unlockBegan time.Time // zero until the harness first calls Unlock
	ended       time.Time // when the watcher saw Done
	forced      time.Time // when a ForceUnlock may have released it first (zero: none)
}

// passedAbove reports whether h is a write its Client's cohort passed on
// (fairrw.WithCohorts) from a hold Redis granted with token: Redis keeps
// that token, and h's is one of the tokens the grant reserved above it.
func (h *confHold) passedAbove(token uint64) bool {
	return h.wokenBy == "cohort" && token != 0 && token < h.token && h.token-token < fwire.TokenReserve
}

// inCohort reports whether h is a write that joined its Client's cohort
// (fairrw.WithCohorts): a first write hold by Lock, on a watchdog lease,
// under a fair policy, from a Client that does not wait for replicas. Its
// Client passes it the lock ahead of writers queued in Redis (within the
// documented bound), so it is not judged by FIFO across Clients.
func (h *confHold) inCohort(fair bool) bool {
	return fair && h.mode == fairrw.Write && h.waits && h.asked == 0 && !h.synced && h.parent == 0 && !h.Quorum
}

func (h *confHold) String() string {
	return fmt.Sprintf("#%d owner o%d (wire %s) %s via %s [%s]", h.id, h.Owner, shortWire(h.wire), h.mode, h.op, h.Client)
}

// shortWire abbreviates "<uuid>:<n>" to its first 8 characters and the id.
func shortWire(w string) string {
	if w == "" {
		return "-"
	}
	if i := strings.LastIndexByte(w, ':'); i > 8 {
		return w[:8] + "…:" + w[i+1:]
	}
	return w
}

type confWriteGrant struct {
	hold     *confHold
	returned time.Time
}

// confWaiter is a blocking Lock or RLock in progress, for the liveness check.
type confWaiter struct {
	Name      string
	mode      fairrw.Mode
	op        string
	start     time.Time
	ctx       context.Context
	seq       int64
	freeSince time.Time
	reported  bool
	gen       *confGen
	// tiny: its lease (under 20ms) may be outlasted by every round trip,
	// so that it is never granted: no liveness bound applies to it.
	tiny bool
}

type confViolation struct {
	Kind   string
	At     time.Duration
	report string
}

// confOracle keeps the live leases of every name and checks each grant.
type confOracle struct {
	target string
	start  time.Time
	faults *confFaults
	// ctl judges the overruns: a call's overrun past confOverrunBound fails
	// the test when it is also past the machine's lateness at the time
	// (the control's worst), judged when the test ends.
	ctl   *lateness.Control
	bound time.Duration // liveness bound

	Mu         sync.Mutex
	nextID     int64
	nextOwner  int64
	live       map[string][]*confHold // leases not yet seen Done, by name
	Writes     map[string][]confWriteGrant
	ownerToken map[int64]uint64 // a write owner's token, for its further writes
	grantSeq   map[string]int64
	inflight   map[string]int       // calls in progress on a name (acquires, unlocks)
	lastActive map[string]time.Time // last call end, grant, or lease end on a name
	events     map[string][]string  // recent events by name
	waiters    map[*confWaiter]struct{}
	violations []confViolation
	byKind     map[string]int
	Stats      map[string]int
	stopping   int                // generations whose Shutdown or Close is under way
	releases   []*confRelease     // what nil Shutdowns released, for the liveness check
	inspects   []confInspectWrite // write holders Inspect reported, checked at the end
	waits      *confWaitLog       // the synced Clients' WAITs (conformance_sync_diag.go)

	runEnded     time.Time               // when the workload's ctx was cancelled
	overruns     map[string]*confOverrun // by call kind (conformance_deadline_test.go)
	tops         []*confHold             // every first hold granted, for the order checks
	furtherWrite map[int64]bool          // owners that took a further write
	forces       map[string][]*confForce // ForceUnlock calls by name
	leases       confLeaseFigures        // conformance_promises_test.go
}

func newConfOracle(target string, start time.Time, f *confFaults, bound time.Duration) *confOracle {
	return &confOracle{
		target: target, start: start, faults: f, bound: bound,
		live:         map[string][]*confHold{},
		Writes:       map[string][]confWriteGrant{},
		ownerToken:   map[int64]uint64{},
		grantSeq:     map[string]int64{},
		inflight:     map[string]int{},
		lastActive:   map[string]time.Time{},
		events:       map[string][]string{},
		waiters:      map[*confWaiter]struct{}{},
		byKind:       map[string]int{},
		Stats:        map[string]int{},
		overruns:     map[string]*confOverrun{},
		forces:       map[string][]*confForce{},
		furtherWrite: map[int64]bool{},
		waits:        &confWaitLog{},
	}
}

// at formats t as an offset from the start of the run.
func (o *confOracle) At(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("+%.3fs", t.Sub(o.start).Seconds())
}

func (o *confOracle) count(what string, n int) {
	o.Mu.Lock()
	o.Stats[what] += n
	o.Mu.Unlock()
}

func (o *confOracle) newOwner() int64 {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.nextOwner++
	return o.nextOwner
}

// eventLocked appends to the name's recent history (last 24 kept).
func (o *confOracle) eventLocked(name string, now time.Time, format string, args ...any) {
	ev := o.At(now) + " " + fmt.Sprintf(format, args...)
	evs := append(o.events[name], ev)
	if len(evs) > 24 {
		evs = evs[len(evs)-24:]
	}
	o.events[name] = evs
}

func (o *confOracle) event(name string, format string, args ...any) {
	o.Mu.Lock()
	o.eventLocked(name, time.Now(), format, args...)
	o.Mu.Unlock()
}

// violateLocked records a violation with the fault history and the name's
// recent events.
func (o *confOracle) violateLocked(kind, name string, now time.Time, format string, args ...any) {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s [%s] at %s on %q: ", kind, o.target, o.At(now), name)
	fmt.Fprintf(&b, format, args...)
	b.WriteString("\n    faults just before (last 6s, and any in progress):\n")
	b.WriteString(o.faults.history(now, 6*time.Second, "      "))
	if name != "" {
		b.WriteString("    recent events on the name:\n")
		for _, ev := range o.events[name] {
			b.WriteString("      " + ev + "\n")
		}
	}
	o.violations = append(o.violations, confViolation{Kind: kind, At: now.Sub(o.start), report: b.String()})
	o.byKind[kind]++
}

func (o *confOracle) violate(kind, name string, format string, args ...any) {
	o.Mu.Lock()
	o.violateLocked(kind, name, time.Now(), format, args...)
	o.Mu.Unlock()
}

// conflicts reports whether holds of modes a and b exclude each other.
func confConflict(a, b fairrw.Mode) bool { return a == fairrw.Write || b == fairrw.Write }

// describeHoldLocked formats a lease with its deadline d (as sampled).
func (o *confOracle) describeHoldLocked(h *confHold, d time.Time) string {
	return fmt.Sprintf("%s token %d granted %s deadline %s", h, h.token, o.At(h.granted), o.At(d))
}

// grant checks a new grant against every live lease of its name and against
// the tokens granted before, then registers it. It runs right after the
// acquire returned (h.granted).
func (o *confOracle) Grant(h *confHold) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.nextID++
	h.id = o.nextID
	o.Stats["grants"]++
	o.Stats["grants "+h.mode.String()]++
	if h.wokenBy == "cohort" {
		o.Stats["grants passed or led in a cohort"]++
	}
	if h.wokenBy == "share" {
		o.Stats["reads sharing a hold"]++
	}

	// Deadlines only move forward while a lease lives: a deadline read
	// before now is at most the deadline at now. Done is read after now:
	// open then means open at now. A lease whose Unlock the harness began
	// may have been released in Redis at any moment since: not counted.
	type cand struct {
		e *confHold
		d time.Time
	}
	var cands []cand
	// A grant a ForceUnlock may have released before it returned is
	// not judged: another owner may rightly hold beside it by now.
	forced := o.markForcedAtGrantLocked(h, time.Now())
	for _, e := range o.live[h.Name] {
		if e.Owner == h.Owner || !confConflict(h.mode, e.mode) || !e.unlockBegan.IsZero() {
			continue
		}
		cands = append(cands, cand{e, e.lease.Deadline()})
	}
	selfD := h.lease.Deadline()
	now := time.Now()
	selfLive := now.Before(selfD) && !ConfDone(h.lease.Done())
	var conflicts []string
	kind := "exclusion/shared-handle" // every conflict is another call on the same handle (finding 7)
	for _, c := range cands {
		if now.Before(c.d) && !ConfDone(c.e.lease.Done()) {
			note := ""
			switch {
			case c.e.wire != "" && c.e.wire == h.wire:
				note = " (same wire owner: one handle shared by two goroutines)"
			case c.e.Client == h.Client && !strings.HasSuffix(h.Client, "/private"):
				note = " (same shared handle " + h.Client + ")"
			case c.e.gen != nil && !c.e.gen.stopBegan.IsZero():
				kind = "exclusion/stopped-client"
				note = fmt.Sprintf(" (its Client's %s began %s, ended %s)", confStopKind(c.e.gen), o.At(c.e.gen.stopBegan), o.At(c.e.gen.stopEnded))
			default:
				kind = "exclusion/between-owners"
			}
			conflicts = append(conflicts, o.describeHoldLocked(c.e, c.d)+note)
		}
	}
	if !selfLive {
		o.Stats["grants already ended at return"]++
	}
	o.checkLeaseLocked(h, selfD, now)
	o.checkSyncLocked(h, now)
	if h.parent == 0 {
		o.tops = append(o.tops, h)
	} else if h.mode == fairrw.Write {
		o.furtherWrite[h.Owner] = true
	}
	if g := h.gen; g != nil {
		g.holds = append(g.holds, h)
		if !g.stopEnded.IsZero() && !ConfDone(h.lease.Done()) && !(h.Quorum && h.lease.Deadline().IsZero()) {
			o.violateLocked("stop/lease-outlived", h.Name, now, "%s returned a lease at %s that is alive though its Client's %s returned at %s (%v): no grant outlives it",
				h, o.At(h.granted), confStopKind(g), o.At(g.stopEnded), g.stopErr)
		}
	}
	if forced && len(conflicts) > 0 {
		o.Stats["grants forced before their return, not judged"]++
	}
	if selfLive && len(conflicts) > 0 && !forced {
		o.violateLocked(kind, h.Name, now,
			"%s granted at %s (call began %s, token %d, deadline %s) while another owner holds a conflicting lease, not Done and before its deadline (checked at %s):\n      %s",
			h, o.At(h.granted), o.At(h.callStart), h.token, o.At(selfD), o.At(now), strings.Join(conflicts, "\n      "))
	}

	if h.mode == fairrw.Write {
		if h.parent != 0 {
			if want, ok := o.ownerToken[h.Owner]; ok && want != h.token {
				o.violateLocked("token/further-write", h.Name, now, "further write %s got token %d, its owner's write has %d: a further write keeps its owner's token", h, h.token, want)
			}
		} else {
			var before *confWriteGrant
			for i := range o.Writes[h.Name] {
				w := &o.Writes[h.Name][i]
				if w.hold.Owner == h.Owner {
					continue
				}
				if w.hold.token == h.token {
					kind := "token/duplicate"
					if w.hold.Client == h.Client && !strings.HasSuffix(h.Client, "/private") {
						kind = "token/duplicate-shared-handle"
					}
					o.violateLocked(kind, h.Name, now, "write %s got token %d, the same as another owner's write %s", h, h.token, o.describeHoldLocked(w.hold, w.hold.lease.Deadline()))
					continue
				}
				if w.returned.Before(h.callStart) && h.token < w.hold.token && (before == nil || w.hold.token > before.hold.token) {
					before = w
				}
			}
			if force := o.forceBeforeLocked(h); before != nil && forced && h.wokenBy == "cohort" && !force.IsZero() && before.hold.granted.After(force) {
				// docs/policies.md, "A pass is a grant Redis does not see": a
				// ForceUnlock freed the cohort's hold in Redis, which granted
				// the write elsewhere, and the cohort passed its hold on until
				// a renewal found it gone. Such a Lease carries a token below
				// the new holder's (a fencing store refuses it), and is lost
				// at that renewal: within a third of the lease of the force,
				// plus the machine's lateness.
				o.Stats["token: cohort passes after a ForceUnlock, below a write granted since (documented)"]++
				if late := h.granted.Sub(force) - confLeaseTime/3; late > 0 && o.ctl != nil {
					o.ctl.Within(fmt.Sprintf("conformance: token/pass-after-force: write %s, passed on by its cohort at %s, after a ForceUnlock began at %s freed the hold in Redis",
						h, o.At(h.granted), o.At(force)), late, confPassAfterForce)
				}
				before = nil
			}
			if before != nil {
				o.violateLocked("token/decrease", h.Name, now, "write %s (call began %s) got token %d, lower than the token %d of write %s granted (returned %s) before the call began",
					h, o.At(h.callStart), h.token, before.hold.token, before.hold, o.At(before.returned))
			}
			o.Writes[h.Name] = append(o.Writes[h.Name], confWriteGrant{hold: h, returned: h.granted})
			o.ownerToken[h.Owner] = h.token
		}
	}

	o.live[h.Name] = append(o.live[h.Name], h)
	o.grantSeq[h.Name]++
	o.lastActive[h.Name] = now
	o.eventLocked(h.Name, now, "grant %s token %d deadline %s", h, h.token, o.At(selfD))
}

// unlockBegins records that the harness is about to call Unlock on h (the
// first time): from now on h may be released in Redis at any moment.
func (o *confOracle) unlockBegins(h *confHold) {
	o.Mu.Lock()
	if h.unlockBegan.IsZero() {
		h.unlockBegan = time.Now()
	}
	o.inflight[h.Name]++
	o.Mu.Unlock()
}

func (o *confOracle) unlockEnds(h *confHold, err error) {
	o.Mu.Lock()
	o.inflight[h.Name]--
	now := time.Now()
	o.lastActive[h.Name] = now
	res := "nil"
	if err != nil {
		res = confErrKind(err)
	}
	o.eventLocked(h.Name, now, "unlock #%d -> %s", h.id, res)
	o.Mu.Unlock()
}

// acquireBegins registers an acquire in progress on name and, for a blocking
// one, a waiter for the liveness check.
func (o *confOracle) acquireBegins(ctx context.Context, name string, mode fairrw.Mode, op string, wait bool, gen *confGen, tiny bool) *confWaiter {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.inflight[name]++
	if !wait {
		return nil
	}
	w := &confWaiter{Name: name, mode: mode, op: op, start: time.Now(), ctx: ctx, seq: o.grantSeq[name], gen: gen, tiny: tiny}
	o.waiters[w] = struct{}{}
	return w
}

func (o *confOracle) acquireEnds(name string, w *confWaiter, gen *confGen, start, ret time.Time, op string, err error) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.inflight[name]--
	o.lastActive[name] = time.Now()
	if w != nil {
		delete(o.waiters, w)
	}
	// A Shutdown that returned nil waited for every call under way on its
	// Client (waiters woken with ErrClosed, attempts given back).
	const margin = 500 * time.Millisecond
	if gen != nil && gen.Quorum == nil && gen.graceful && !gen.stopEnded.IsZero() && gen.stopErr == nil &&
		start.Before(gen.stopBegan) && ret.After(gen.stopEnded.Add(margin)) {
		o.violateLocked("stop/call-outlived", name, ret, "%s began %s and returned %s (%s), %v after its Client's Shutdown returned nil at %s",
			op, o.At(start), o.At(ret), confErrKind(err), ret.Sub(gen.stopEnded).Round(time.Millisecond), o.At(gen.stopEnded))
	}
}

// ended is called by a lease's watcher once Done is closed (seen at seen),
// with the lease's last known deadline.
func (o *confOracle) ended(h *confHold, seen, deadline time.Time) {
	err := h.lease.Err()
	o.Mu.Lock()
	defer o.Mu.Unlock()
	h.ended = seen
	live := o.live[h.Name]
	for i, e := range live {
		if e == h {
			o.live[h.Name] = append(live[:i:i], live[i+1:]...)
			break
		}
	}
	if seen.After(o.lastActive[h.Name]) {
		o.lastActive[h.Name] = seen
	}
	how := "unlocked"
	if err != nil {
		how = "lost: " + err.Error()
		o.Stats["leases lost"]++
	}
	o.eventLocked(h.Name, seen, "end #%d (%s)", h.id, how)
	// A lease reported lost before its deadline, with no Unlock of ours
	// under way: Redis did not keep the hold until the deadline (or the
	// renewal misjudged it). Not for a Client closing.
	const margin = 100 * time.Millisecond
	// A Client stopping ends its leases (a quorum lease loses its majority).
	stopped := h.gen != nil && !h.gen.stopBegan.IsZero() && !h.gen.stopBegan.After(seen)
	if err != nil && errors.Is(err, fairrw.ErrLeaseLost) && !errors.Is(err, fairrw.ErrClosed) && !stopped &&
		h.unlockBegan.IsZero() && !deadline.IsZero() && seen.Before(deadline.Add(-margin)) {
		o.violateLocked("early-loss", h.Name, seen, "%s (token %d, granted %s) reported lost at %s, %v before its deadline %s, with no Unlock under way: %v",
			h, h.token, o.At(h.granted), o.At(seen), deadline.Sub(seen).Round(time.Millisecond), o.At(deadline), err)
	}
}

// checkLiveness runs periodically: a blocking acquire whose name has had no
// live conflicting lease and no grant for longer than the bound, with no
// fault in progress or ended within the bound, is a liveness violation.
func (o *confOracle) checkLiveness() {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	active, lastEnd := o.faults.state()
	o.checkAfterShutdownLocked(now, active, lastEnd)
	if o.stopping > 0 {
		active = true // a Client stopping may leave holds to expire: judged when it returns
	}
	for w := range o.waiters {
		if w.ctx.Err() != nil || w.reported || w.tiny {
			w.freeSince = time.Time{}
			continue
		}
		if s := o.grantSeq[w.Name]; s != w.seq {
			w.seq, w.freeSince = s, time.Time{}
		}
		busy := false
		for _, e := range o.live[w.Name] {
			if !confConflict(w.mode, e.mode) || ConfDone(e.lease.Done()) {
				continue
			}
			if !e.unlockBegan.IsZero() || now.Before(e.lease.Deadline()) {
				busy = true
				break
			}
		}
		if busy {
			w.freeSince = time.Time{}
			continue
		}
		if w.freeSince.IsZero() {
			w.freeSince = now
		}
		ref := w.freeSince
		if lastEnd.After(ref) {
			ref = lastEnd
		}
		// The bound plus what the machine has added to a wait so far (the
		// lateness control's worst): a waiter's wake-ups and retries are
		// waits, which a loaded machine runs late (a Redisson waiter was
		// granted 3.86 s after the name fell free, of a 3.8 s bound, in a
		// CI run beside other work).
		// And what Redis added since shortly before the name fell free (the
		// worst PING of the Redis controls): a waiter's retry is a call to
		// a redis-server, which a loaded machine schedules late too, while
		// the test's own goroutines run on time (a waiter granted 5.3 s
		// after the name fell free, of a 4.7 s bound, with two suites side
		// by side and calls returning 1.3 s late).
		bound := o.bound
		if o.ctl != nil {
			bound += o.ctl.Worst() + o.ctl.WorstStall(ref.Add(-confLeaseTime), now, true)
		}
		if active || now.Sub(ref) <= bound {
			continue
		}
		w.reported = true
		o.violateLocked("liveness", w.Name, now, "%s waiting since %s: no live conflicting lease and no grant on the name since %s (last fault ended %s), yet not granted after %v (bound %v, with the machine's worst lateness so far)",
			w.op, o.At(w.start), o.At(w.freeSince), o.At(lastEnd), now.Sub(ref).Round(time.Millisecond), bound)
	}
}

// idleFor reports whether name has had no live lease and no call in
// progress for at least d.
func (o *confOracle) idleFor(name string, d time.Duration) bool {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	if o.inflight[name] > 0 {
		return false
	}
	for _, e := range o.live[name] {
		if !ConfDone(e.lease.Done()) {
			return false
		}
	}
	return time.Since(o.lastActive[name]) >= d
}

func (o *confOracle) liveCount() int {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	n := 0
	for _, l := range o.live {
		n += len(l)
	}
	return n
}

// summary returns the counters, sorted.
func (o *confOracle) summary() (stats, kinds string, total int) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	return confSorted(o.Stats), confSorted(o.byKind), len(o.violations)
}

func confSorted(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

func ConfDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// confErrKind names an error for the counters.
func confErrKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fairrw.ErrNotAcquired):
		return "not-acquired"
	case errors.Is(err, fairrw.ErrNotHeld):
		return "not-held"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, fairrw.ErrLeaseLost):
		return "lease-lost"
	case errors.Is(err, fairrw.ErrClosed):
		return "closed"
	case errors.Is(err, fairrw.ErrNotReplicated):
		return "not-replicated"
	default:
		return "other"
	}
}
