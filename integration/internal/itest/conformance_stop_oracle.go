package itest

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// confRelease is what a Shutdown that returned nil released on one name.
type confRelease struct {
	Name  string
	began time.Time // the Shutdown's call
	At    time.Time // its return
	seq   int64     // the name's grants at its return
	// The latest deadline of the write leases, and of any lease, it ended:
	// without the releases, Redis would have kept them that long.
	writeUntil, anyUntil time.Time
	// Whether a lease of another Client still held back a writer, or a
	// reader, when it returned.
	busyWrite, busyRead bool
	reported            map[*confWaiter]bool
}

func confStopKind(g *confGen) string {
	if g.graceful {
		return "Shutdown"
	}
	return "Close"
}

// liveOf counts g's leases not yet seen Done.
func (o *confOracle) liveOf(g *confGen) int {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	n := 0
	for _, h := range g.holds {
		if h.ended.IsZero() {
			n++
		}
	}
	return n
}

// stoppableOf is how many of g's holds a Shutdown now would end: live, no
// Unlock begun on them (a hold being released is the Unlock's, not the
// Shutdown's), and with at least 300ms of lease left, so that it cannot
// run out in between.
func (o *confOracle) stoppableOf(g *confGen) int {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	n, soon := 0, time.Now().Add(300*time.Millisecond)
	for _, h := range g.holds {
		if h.ended.IsZero() && h.unlockBegan.IsZero() && h.lease.Deadline().After(soon) {
			n++
		}
	}
	return n
}

// stoppedBy reports whether g's stop began by t.
func (o *confOracle) stoppedBy(g *confGen, t time.Time) bool {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	return g != nil && !g.stopBegan.IsZero() && !g.stopBegan.After(t)
}

// forcedBy reports whether a ForceUnlock may have released h by t.
func (o *confOracle) forcedBy(h *confHold, t time.Time) bool {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	return !h.forced.IsZero() && !h.forced.After(t)
}

func (o *confOracle) stopBegins(g *confGen, graceful bool) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	g.stopBegan, g.graceful = time.Now(), graceful
	o.stopping++
	seen := map[string]bool{}
	for _, h := range g.holds {
		if !seen[h.Name] {
			seen[h.Name] = true
			o.eventLocked(h.Name, g.stopBegan, "%s of %s begins", confStopKind(g), g.label)
		}
	}
}

// stopEnds judges g's stop, called [began, ended], which returned err.
func (o *confOracle) stopEnds(g *confGen, began, ended time.Time, err error) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	g.stopEnded, g.stopErr = ended, err
	o.stopping--
	kind := confStopKind(g)
	o.Stats[kind+"s"]++
	if err != nil {
		o.Stats[kind+"s -> "+confErrKind(err)]++
	}
	rels := map[string]*confRelease{}
	latest := ended
	for _, h := range g.holds {
		done := ConfDone(h.lease.Done())
		d := h.lease.Deadline()
		if d.After(latest) {
			latest = d
		}
		if !h.ended.IsZero() && h.ended.Before(began) {
			continue // ended before the stop
		}
		if h.Quorum {
			// A quorum lease ends when it sees its majority go, on a
			// goroutine of its own; it is no longer believed held (its
			// Deadline is zero) once the node leases ended.
			if !done && !d.IsZero() {
				o.violateLocked("stop/lease-alive", h.Name, now, "quorum lease %s (token %d) still believed held (deadline %s) when the %s of every node Client of its quorum %s returned at %s",
					h, h.token, o.At(d), kind, g.label, o.At(ended))
			} else if h.unlockBegan.IsZero() {
				o.Stats[kind+" leases ended"]++
			}
			continue
		}
		if !done {
			o.violateLocked("stop/lease-alive", h.Name, now, "%s (token %d, deadline %s) not Done when its Client's %s returned at %s (%v): every lease ends before it returns",
				h, h.token, o.At(d), kind, o.At(ended), err)
			continue
		}
		lerr := h.lease.Err()
		if h.unlockBegan.IsZero() && d.After(ended) && !(errors.Is(lerr, fairrw.ErrClosed) && errors.Is(lerr, fairrw.ErrLeaseLost)) {
			o.violateLocked("stop/lease-err", h.Name, now, "%s (deadline %s, no Unlock called) ended by its Client's %s [%s, %s] with Err %v: want ErrLeaseLost and ErrClosed",
				h, o.At(d), kind, o.At(began), o.At(ended), lerr)
		}
		if !errors.Is(lerr, fairrw.ErrClosed) {
			continue
		}
		o.Stats[kind+" leases ended"]++
		if !g.graceful || err != nil {
			continue
		}
		r := rels[h.Name]
		if r == nil {
			r = &confRelease{Name: h.Name, began: began, At: ended, seq: o.grantSeq[h.Name], reported: map[*confWaiter]bool{}}
			rels[h.Name] = r
		}
		if d.After(r.anyUntil) {
			r.anyUntil = d
		}
		if h.mode == fairrw.Write && d.After(r.writeUntil) {
			r.writeUntil = d
		}
	}
	if !g.graceful || err != nil {
		// Holds are left to expire: a fault until they have (a renewal
		// that ran as the Client stopped moved them a lease on).
		until := latest.Add(confLeaseTime + confUnlockTimeout)
		if g.Quorum != nil {
			until = ended.Add(confLongMax + confUnlockTimeout)
		}
		o.faults.recordSpan("client-"+kind, g.label, fmt.Sprintf("holds left to expire (returned %v)", err), began, until)
		return
	}
	if g.Quorum != nil {
		return // quorum waiters are judged by the general liveness bound
	}
	active, lastEnd := o.faults.state()
	for name, r := range rels {
		if active || began.Sub(lastEnd) < confProbeQuiet {
			continue // a fault may have left holds the model does not see
		}
		for _, e := range o.live[name] {
			if e.gen == g || ConfDone(e.lease.Done()) || (e.unlockBegan.IsZero() && !ended.Before(e.lease.Deadline())) {
				continue
			}
			r.busyWrite = true
			if e.mode == fairrw.Write {
				r.busyRead = true
			}
		}
		o.releases = append(o.releases, r)
		o.Stats["Shutdown releases judged"]++
		for w := range o.waiters {
			if w.Name == name && w.ctx.Err() == nil && (w.gen == nil || w.gen.stopBegan.IsZero()) {
				o.Stats["waiters at a judged Shutdown release"]++
			}
		}
		o.eventLocked(name, ended, "Shutdown of %s returned nil: released writes until %s, any until %s", g.label, o.At(r.writeUntil), o.At(r.anyUntil))
	}
}

// checkAfterShutdownLocked: a waiter that was waiting when a Shutdown
// returned nil, held back by nothing but what the Shutdown released (no
// other live conflicting lease then or since, no grant since, no fault
// around), is granted within confShutdownBound, while the leases released
// would have held it back well past that.
func (o *confOracle) checkAfterShutdownLocked(now time.Time, active bool, lastEnd time.Time) {
	keep := o.releases[:0]
	for _, r := range o.releases {
		if now.Sub(r.At) > confBound {
			continue
		}
		keep = append(keep, r)
		if active || lastEnd.After(r.began.Add(-confProbeQuiet)) || o.grantSeq[r.Name] != r.seq {
			continue
		}
		for w := range o.waiters {
			if w.Name != r.Name || w.reported || w.tiny || r.reported[w] || w.ctx.Err() != nil || !w.start.Before(r.At) || (w.gen != nil && !w.gen.stopBegan.IsZero()) {
				continue
			}
			until, busy := r.anyUntil, r.busyWrite
			if w.mode == fairrw.Read {
				until, busy = r.writeUntil, r.busyRead
			}
			if busy || !until.After(r.At.Add(confShutdownBound+200*time.Millisecond)) || o.busyLocked(w, now) {
				continue
			}
			if now.Sub(r.At) <= confShutdownBound {
				continue
			}
			r.reported[w] = true
			w.reported = true
			o.violateLocked("liveness/after-shutdown", w.Name, now, "%s waiting since %s still not granted %v after a Shutdown returned nil at %s that released holds it waited for (they ran until %s), with no other live conflicting lease, no grant and no fault since (bound %v)",
				w.op, o.At(w.start), now.Sub(r.At).Round(time.Millisecond), o.At(r.At), o.At(until), confShutdownBound)
		}
	}
	o.releases = keep
}

// busyLocked reports whether a live lease conflicting with w's mode holds
// its name back at now.
func (o *confOracle) busyLocked(w *confWaiter, now time.Time) bool {
	for _, e := range o.live[w.Name] {
		if !confConflict(w.mode, e.mode) || ConfDone(e.lease.Done()) {
			continue
		}
		if !e.unlockBegan.IsZero() || now.Before(e.lease.Deadline()) {
			return true
		}
	}
	return false
}

// recordSpan records a fault that began at start and ends at end (which
// may be ahead: until then the liveness and stranded-hold checks wait).
func (f *confFaults) recordSpan(kind, target, detail string, start, end time.Time) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	x := f.beginLocked(kind, target, detail)
	x.start, x.end = start, end
	if end.After(f.lastEnd) {
		f.lastEnd = end
	}
}
