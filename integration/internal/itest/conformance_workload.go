package itest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

func confRWAcquire(ctx context.Context, m *fairrw.RWMutex, mode fairrw.Mode, wait bool, o []fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case mode == fairrw.Write && wait:
		return m.Lock(ctx, o...)
	case mode == fairrw.Write:
		return m.TryLock(ctx, o...)
	case wait:
		return m.RLock(ctx, o...)
	default:
		return m.TryRLock(ctx, o...)
	}
}

func confMutexAcquire(ctx context.Context, m *fairrw.Mutex, wait bool, o []fairrw.AcquireOption) (*fairrw.Lease, error) {
	if wait {
		return m.Lock(ctx, o...)
	}
	return m.TryLock(ctx, o...)
}

func confQuorumAcquire(ctx context.Context, m *fairrw.QuorumRWMutex, mode fairrw.Mode, wait bool, o []fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case mode == fairrw.Write && wait:
		return m.Lock(ctx, o...)
	case mode == fairrw.Write:
		return m.TryLock(ctx, o...)
	case wait:
		return m.RLock(ctx, o...)
	default:
		return m.TryRLock(ctx, o...)
	}
}

func confOpName(mode fairrw.Mode, wait bool) string {
	switch {
	case mode == fairrw.Write && wait:
		return "Lock"
	case mode == fairrw.Write:
		return "TryLock"
	case wait:
		return "RLock"
	default:
		return "TryRLock"
	}
}

// confLeaseKind is the lease an acquire asks for.
type confLeaseKind struct {
	desc     string
	opts     []fairrw.AcquireOption
	explicit bool
	d        time.Duration // the lease asked for (explicit)
}

// tiny: a lease a slow round trip may outlast, so that no grant of it is
// ever returned (under 20ms).
func (lk confLeaseKind) tiny() bool { return lk.explicit && lk.d < 20*time.Millisecond }

// confPickLease picks the watchdog lease (38%) or WithLease(d) with d from
// the shortest accepted (1ms) through short ones (2-19ms, 20-200ms,
// 200-400ms) and middling ones (0.4-1.4s) to above the Client's lease time
// (1.6-4s); a third of them not whole milliseconds.
func confPickLease(rng *rand.Rand) confLeaseKind {
	between := func(lo, hi time.Duration) time.Duration {
		d := (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Round(time.Millisecond)
		if rng.IntN(3) == 0 {
			d += time.Duration(rng.Int64N(int64(time.Millisecond)))
		}
		return d
	}
	var d time.Duration
	switch r := rng.IntN(100); {
	case r < 38:
		return confLeaseKind{desc: "watchdog"}
	case r < 41:
		d = time.Millisecond
	case r < 45:
		d = between(2*time.Millisecond, 19*time.Millisecond)
	case r < 60:
		d = between(20*time.Millisecond, 200*time.Millisecond)
	case r < 75:
		d = between(200*time.Millisecond, confShortMax)
	case r < 85:
		d = between(confShortMax, 1400*time.Millisecond)
	default:
		d = between(confLeaseTime+100*time.Millisecond, confLongMax)
	}
	return confLeaseKind{desc: "lease " + d.String(), opts: []fairrw.AcquireOption{fairrw.WithLease(d)}, explicit: true, d: d}
}

func confPickHold(rng *rand.Rand) time.Duration {
	switch r := rng.IntN(100); {
	case r < 75:
		return time.Duration(rng.Int64N(int64(120 * time.Millisecond)))
	case r < 93:
		return 120*time.Millisecond + time.Duration(rng.Int64N(int64(500*time.Millisecond)))
	default:
		return 700*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond)))
	}
}

func (e *confEnv) isStopped() bool { return ConfDone(e.stopped) }

// pickName picks a name open to workers ("" if none).
func (e *confEnv) pickName(rng *rand.Rand) string {
	e.closedMu.Lock()
	closed := e.closed
	e.closedMu.Unlock()
	for range 8 {
		if n := e.Names[rng.IntN(len(e.Names))]; n != closed {
			return n
		}
	}
	return ""
}

func (e *confEnv) worker(rng *rand.Rand) {
	for !e.isStopped() {
		name := e.pickName(rng)
		if name == "" {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		switch r := rng.IntN(100); {
		case r < 8:
			e.inspect(rng, name)
		case e.tg.Kind != ConfQuorumKind && r < 10:
			e.forceUnlock(rng, name)
		case e.tg.Kind != ConfQuorumKind && r < 54:
			e.session(rng, name)
		case e.tg.Kind == ConfRWKind && e.tg.Tenant == nil && r < 62:
			// Not in the short ACL tenant runs: their coverage checks
			// (a Shutdown that ends a lease) need the workload's share.
			e.burst(rng, name)
		default:
			e.single(rng, name)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
	}
}

// acquire runs call as an acquire of name by owner (a further hold of
// parent when parent is set) under cc, asking for the lease lk, and
// registers its grant with the oracle. single: the owner takes no other
// hold.
func (e *confEnv) Acquire(cc *confCtx, name string, owner int64, parent *confHold, mode fairrw.Mode, wait bool, op, client string,
	gen *confGen, lk confLeaseKind, single bool, call func(context.Context) (confLease, string, error)) (*confHold, error) {
	ctx := cc.ctx
	w := e.o.acquireBegins(ctx, name, mode, op, wait && parent == nil, gen, lk.tiny())
	start := time.Now()
	unwatch := e.watchStuck(ctx, op)
	l, wire, err := call(ctx)
	ret := time.Now()
	unwatch()
	var h *confHold
	if err == nil {
		h = &confHold{Name: name, Owner: owner, wire: wire, mode: mode, token: l.Token(), lease: l, op: op, Client: client,
			callStart: start, granted: ret, Quorum: e.tg.Kind == ConfQuorumKind, gen: gen,
			asked: lk.d, single: single, waits: wait && parent == nil, wokenBy: hidden.WokenBy(l), synced: gen.synced}
		if parent != nil {
			h.parent = parent.id
		}
		e.o.Grant(h)
		e.contextAtGrant(h)
		e.watch(h)
	} else {
		e.o.event(name, "refused %s: %s", op, confErrKind(err))
	}
	e.o.acquireEnds(name, w, gen, start, ret, op, err)
	e.o.callReturned(e.callKind(mode, wait, parent != nil), cc, start, ret, err, op)
	if gen.synced && parent == nil {
		e.o.syncOutcome(start, ret, err)
	}
	kind := "top"
	if parent != nil {
		kind = "further"
	}
	e.o.count(fmt.Sprintf("ops %s %s -> %s", kind, mode, confErrKind(err)), 1)
	e.o.count("ops", 1)
	if lk.tiny() {
		e.o.count("ops with a lease under 20ms -> "+confErrKind(err), 1)
	}
	return h, err
}

// callKind names a call for the overrun figures.
func (e *confEnv) callKind(mode fairrw.Mode, wait, further bool) string {
	switch {
	case further && mode == fairrw.Write:
		return "Lease.Lock"
	case further:
		return "Lease.RLock"
	case e.tg.Kind == ConfQuorumKind:
		return "Quorum." + confOpName(mode, wait)
	case e.tg.Kind == ConfMutexKind:
		return "Mutex." + confOpName(mode, wait)
	}
	return confOpName(mode, wait)
}

// watch waits for h's end and reports it to the oracle with the lease's
// last known deadline (sampled while alive for a quorum lease, whose
// Deadline is zero once lost).
func (e *confEnv) watch(h *confHold) {
	e.watches.Add(1)
	go func() {
		defer e.watches.Done()
		last := h.lease.Deadline()
		if h.Quorum {
			tick := time.NewTicker(25 * time.Millisecond)
			defer tick.Stop()
		loop:
			for {
				select {
				case <-h.lease.Done():
					break loop
				case <-tick.C:
					if d := h.lease.Deadline(); !d.IsZero() && !ConfDone(h.lease.Done()) {
						last = d
					}
				}
			}
		} else {
			<-h.lease.Done()
			last = h.lease.Deadline()
		}
		seen := time.Now()
		e.contextAtEnd(h)
		e.o.ended(h, seen, last)
	}()
}

// unlock unlocks h (and, sometimes, again) and checks the answers. The
// first Unlock gets a deadline now and then (see unlockCtx).
func (e *confEnv) unlock(rng *rand.Rand, h *confHold) {
	d0 := h.lease.Deadline()
	e.o.unlockBegins(h)
	began := time.Now()
	e.contextWhileHeld(h, "before Unlock")
	aliveAtStart := !ConfDone(h.lease.Done())
	cc := e.unlockCtx(rng)
	err := h.lease.Unlock(cc.ctx)
	ret := time.Now()
	doneAtRet := ConfDone(h.lease.Done())
	e.o.unlockEnds(h, err)
	kind := "Unlock"
	if h.Quorum {
		kind = "Quorum.Unlock"
	}
	e.o.callReturned(kind, cc, began, ret, err, fmt.Sprintf("Unlock%s of %s", cc.desc, h))
	e.unlockCtxChecks(h, cc, err, doneAtRet)
	cc.cancel()
	e.contextAfterUnlock(h, err)
	e.o.count("unlocks -> "+confErrKind(err), 1)
	e.o.count("ops", 1)
	if err != nil && errors.Is(err, fairrw.ErrNotHeld) && aliveAtStart && ret.Before(d0) && !h.Quorum && !e.o.stoppedBy(h.gen, ret) && !e.o.forcedBy(h, ret) {
		e.o.violate("unlock-not-held", h.Name, "Unlock of %s (token %d, granted %s) began at %s while alive and returned at %s, before its deadline %s, with ErrNotHeld: Redis no longer had a hold it had to keep: %v\n    keys now:%s",
			h, h.token, e.o.At(h.granted), e.o.At(began), e.o.At(ret), e.o.At(d0), err, e.dumpName(h.Name))
	}
	if rng.IntN(100) < 15 {
		err2 := h.lease.Unlock(context.Background())
		e.o.count("unlocks twice -> "+confErrKind(err2), 1)
		e.o.count("ops", 1)
		if err2 == nil {
			e.o.violate("double-unlock", h.Name, "second Unlock of %s returned nil (first: %v); want ErrNotHeld", h, err)
		}
	}
}

// holdFor keeps h for d, or until it ends or the workload stops.
func (e *confEnv) holdFor(h *confHold, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.lease.Done():
	case <-e.stopped:
	}
	e.contextWhileHeld(h, "after holding")
}

// burst is a cohort's busy moment (fairrw.WithCohorts): 2-4 goroutines on
// one Client's shared handle each Lock the write (watchdog lease) a few
// times in a row, hold it briefly and unlock, so that the Client passes the
// write among them without Redis; or each RLock, so that their reads share
// one read hold in Redis. Their contexts end now and then as in any
// acquire.
func (e *confEnv) burst(rng *rand.Rand, name string) {
	pool := e.pool[name]
	hd := pool[rng.IntN(len(pool))]
	gen := e.gen(hd.slot)
	label := fmt.Sprintf("%s/h%d", gen.label, hd.hi)
	n, rounds := 2+rng.IntN(3), 1+rng.IntN(4)
	mode := fairrw.Write
	if rng.IntN(2) == 0 {
		mode = fairrw.Read
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	e.o.count("cohort bursts", 1)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seeds[i], uint64(i)))
			for range rounds {
				if e.isStopped() {
					return
				}
				lk := confLeaseKind{desc: "watchdog"}
				cc := e.acquireCtx(rng, true, lk)
				op := fmt.Sprintf("%s burst %s(%s%s)", label, confOpName(mode, true), lk.desc, cc.desc)
				h, err := e.Acquire(cc, name, e.o.newOwner(), nil, mode, true, op, label, gen, lk, true, func(ctx context.Context) (confLease, string, error) {
					return gen.sharedAcquire(ctx, name, hd.hi, mode, true, nil)
				})
				cc.cancel()
				if err != nil {
					continue
				}
				e.holdFor(h, time.Duration(rng.Int64N(int64(3*time.Millisecond))))
				e.unlock(rng, h)
			}
		})
	}
	wg.Wait()
}

// single is one acquire on a shared handle, as a new owner, held a while
// and unlocked (or, for an explicit lease, sometimes left to expire).
func (e *confEnv) single(rng *rand.Rand, name string) {
	pool := e.pool[name]
	hd := pool[rng.IntN(len(pool))]
	gen := e.gen(hd.slot)
	label := fmt.Sprintf("%s/h%d", gen.label, hd.hi)
	mode := fairrw.Write
	if e.tg.Kind != ConfMutexKind && rng.IntN(100) < 50 {
		mode = fairrw.Read
	}
	wait := rng.IntN(100) < 65
	lk := confPickLease(rng)
	cc := e.acquireCtx(rng, wait, lk)
	op := fmt.Sprintf("%s %s(%s%s)", label, confOpName(mode, wait), lk.desc, cc.desc)
	h, err := e.Acquire(cc, name, e.o.newOwner(), nil, mode, wait, op, label, gen, lk, true, func(ctx context.Context) (confLease, string, error) {
		return gen.sharedAcquire(ctx, name, hd.hi, mode, wait, lk.opts)
	})
	cc.cancel()
	if err != nil {
		if wait && errors.Is(err, fairrw.ErrNotAcquired) && !errors.Is(err, fairrw.ErrClosed) && e.runCtx.Err() == nil {
			e.o.violate("lock-refused", name, "%s, a new owner on a shared handle, returned ErrNotAcquired: a waiting acquire of an owner that holds nothing is never refused: %v", op, err)
		}
		return
	}
	if rng.IntN(100) < 12 {
		e.inspect(rng, name) // what Redis keeps of the new hold (checkKeptLocked)
	}
	hold := confPickHold(rng)
	if mode == fairrw.Write && rng.IntN(100) < 25 {
		// A longer write, for readers and writers to queue behind (the
		// order checks).
		hold = 300*time.Millisecond + time.Duration(rng.Int64N(int64(700*time.Millisecond)))
	}
	e.holdFor(h, hold)
	if lk.explicit && rng.IntN(100) < 20 && !e.isStopped() {
		e.o.count("leases left to expire", 1)
		return
	}
	e.unlock(rng, h)
}

// sessHold is a lease of a private owner's session.
type sessHold struct {
	h        *confHold
	L        *fairrw.Lease
	explicit bool
	done     bool // unlocked, or left to expire
}

// session is one owner on a private handle: a top-level acquire, then
// further holds taken through the adapter (reentrant reads and writes,
// downgrades, a refused upgrade), unlocked in random order.
func (e *confEnv) session(rng *rand.Rand, name string) {
	gen := e.gen(rng.IntN(len(e.slots)))
	c := gen.Client
	label := gen.label + "/private"
	var rw *fairrw.RWMutex
	var mx *fairrw.Mutex
	if e.tg.Kind == ConfMutexKind {
		mx = c.Mutex(name)
	} else {
		rw = c.RWMutex(name)
	}
	owner := e.o.newOwner()
	mode := fairrw.Write
	if rw != nil && rng.IntN(100) < 45 {
		mode = fairrw.Read
	}
	wait := rng.IntN(100) < 70
	lk := confPickLease(rng)
	cc := e.acquireCtx(rng, wait, lk)
	op := fmt.Sprintf("%s %s(%s%s)", label, confOpName(mode, wait), lk.desc, cc.desc)
	var top *fairrw.Lease
	h, err := e.Acquire(cc, name, owner, nil, mode, wait, op, label, gen, lk, false, func(ctx context.Context) (confLease, string, error) {
		var err error
		if mx != nil {
			top, err = confMutexAcquire(ctx, mx, wait, lk.opts)
		} else {
			top, err = confRWAcquire(ctx, rw, mode, wait, lk.opts)
		}
		if err != nil {
			return nil, "", err
		}
		return top, top.Owner(), nil
	})
	cc.cancel()
	if err != nil {
		if wait && errors.Is(err, fairrw.ErrNotAcquired) && !errors.Is(err, fairrw.ErrClosed) && e.runCtx.Err() == nil {
			e.o.violate("lock-refused", name, "%s, a new owner on a private handle, returned ErrNotAcquired: %v", op, err)
		}
		return
	}
	holds := []*sessHold{{h: h, L: top, explicit: lk.explicit}}
	alive := func(mode fairrw.Mode, any bool) []*sessHold {
		var out []*sessHold
		for _, s := range holds {
			if !s.done && !ConfDone(s.L.Done()) && (any || s.h.mode == mode) {
				out = append(out, s)
			}
		}
		return out
	}
	further := func(parent *sessHold, mode fairrw.Mode) {
		lk := confPickLease(rng)
		cc := e.shortOr(rng, context.Background(), 30, time.Millisecond, 200*time.Millisecond, 3*time.Second)
		defer cc.cancel()
		call := "RLock"
		if mode == fairrw.Write {
			call = "Lock"
		}
		op := fmt.Sprintf("%s further %s from #%d (%s%s)", label, call, parent.h.id, lk.desc, cc.desc)
		var l *fairrw.Lease
		h, err := e.Acquire(cc, name, owner, parent.h, mode, false, op, label, gen, lk, false, func(ctx context.Context) (confLease, string, error) {
			var err error
			switch {
			case mx != nil:
				l, err = parent.L.Lock(ctx, lk.opts...)
			case mode == fairrw.Write:
				l, err = parent.L.Lock(ctx, lk.opts...)
			default:
				l, err = parent.L.RLock(ctx, lk.opts...)
			}
			if err != nil {
				return nil, "", err
			}
			return l, l.Owner(), nil
		})
		if err == nil {
			holds = append(holds, &sessHold{h: h, L: l, explicit: lk.explicit})
		}
	}
	steps := rng.IntN(6)
	for i := 0; i < steps && !e.isStopped(); i++ {
		time.Sleep(time.Duration(rng.Int64N(int64(150 * time.Millisecond))))
		live := alive(0, true)
		if len(live) == 0 {
			break
		}
		switch r := rng.IntN(100); {
		case r < 25: // a reentrant read, or a downgrade hold from a write
			p := live[rng.IntN(len(live))]
			if mx != nil {
				further(p, fairrw.Write)
			} else {
				further(p, fairrw.Read)
			}
		case r < 42: // a reentrant write
			if ws := alive(fairrw.Write, false); len(ws) > 0 {
				further(ws[rng.IntN(len(ws))], fairrw.Write)
			}
		case r < 57: // an upgrade: must be refused as one
			rs := alive(fairrw.Read, false)
			if rw == nil || len(rs) == 0 || len(alive(fairrw.Write, false)) > 0 {
				continue
			}
			e.upgrade(name, owner, label, gen, rs[rng.IntN(len(rs))], &holds)
		case r < 85: // unlock one, in any order
			s := live[rng.IntN(len(live))]
			s.done = true
			if s.explicit && rng.IntN(100) < 15 {
				e.o.count("leases left to expire", 1)
				continue
			}
			e.unlock(rng, s.h)
		default:
			time.Sleep(confPickHold(rng))
		}
	}
	e.holdFor(h, confPickHold(rng))
	rng.Shuffle(len(holds), func(a, b int) { holds[a], holds[b] = holds[b], holds[a] })
	for _, s := range holds {
		if s.done {
			continue
		}
		s.done = true
		if s.explicit && rng.IntN(100) < 15 && !e.isStopped() {
			e.o.count("leases left to expire", 1)
			continue
		}
		e.unlock(rng, s.h)
	}
}

// upgrade asks for the write from a read lease of an owner that holds no
// write: it must be refused as an upgrade (ErrUpgrade), never granted.
func (e *confEnv) upgrade(name string, owner int64, label string, gen *confGen, parent *sessHold, holds *[]*sessHold) {
	cc := e.plainCtx(context.Background(), 2*time.Second)
	defer cc.cancel()
	op := fmt.Sprintf("%s upgrade: further Lock from read #%d", label, parent.h.id)
	var l *fairrw.Lease
	lk := confLeaseKind{desc: "lease 200ms", opts: []fairrw.AcquireOption{fairrw.WithLease(200 * time.Millisecond)}, explicit: true, d: 200 * time.Millisecond}
	h, err := e.Acquire(cc, name, owner, parent.h, fairrw.Write, false, op, label, gen, lk, false, func(ctx context.Context) (confLease, string, error) {
		var err error
		l, err = parent.L.Lock(ctx, lk.opts...)
		if err != nil {
			return nil, "", err
		}
		return l, l.Owner(), nil
	})
	parentAlive := !ConfDone(parent.L.Done())
	e.o.count("upgrade checks", 1)
	switch {
	case err == nil:
		*holds = append(*holds, &sessHold{h: h, L: l, explicit: true})
		if parentAlive {
			e.o.violate("upgrade-granted", name, "%s was granted (%s) while the read lease it came from is alive", op, h)
		}
	case errors.Is(err, hidden.ErrUpgrade):
		e.o.count("upgrade refused as upgrade", 1)
	case errors.Is(err, fairrw.ErrClosed):
		e.o.count("upgrade closed", 1)
	case parentAlive:
		e.o.violate("upgrade-error", name, "%s failed with %v, which is not an upgrade refusal (not ErrUpgrade), while the read lease is alive", op, err)
	}
}

// monitor checks liveness every 50ms and, now and then, closes a name to the
// workers so that it goes idle, then probes it: once a name has had no live
// lease and no call for confProbeIdle, with no fault for confProbeQuiet, a
// TryLock of a new owner must be granted.
func (e *confEnv) monitor(ctx context.Context, rng *rand.Rand) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	nextClose := time.Now().Add(3 * time.Second)
	closeUntil := time.Time{}
	probed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		e.o.checkLiveness()
		now := time.Now()
		e.closedMu.Lock()
		closed := e.closed
		e.closedMu.Unlock()
		switch {
		case closed == "" && now.After(nextClose) && e.f.quietFor(confProbeQuiet-confProbeIdle):
			e.closedMu.Lock()
			e.closed = e.Names[rng.IntN(len(e.Names))]
			e.closedMu.Unlock()
			closeUntil = now.Add(4 * time.Second)
			probed = false
		case closed != "" && now.After(closeUntil):
			e.closedMu.Lock()
			e.closed = ""
			e.closedMu.Unlock()
			nextClose = now.Add(2*time.Second + time.Duration(rng.Int64N(int64(3*time.Second))))
		case closed != "" && !probed && e.probeReady(closed, now):
			probed = true
			e.probe(closed)
		}
	}
}

// stalled returns the worst stall of the machine (a bare wait) or of Redis
// (a PING) that the lateness control saw in the stretch before now that a
// probe looks back on: its quiet bound plus the longest lease asked for.
func (e *confEnv) stalled(now time.Time) time.Duration {
	if e.o.ctl == nil {
		return 0
	}
	from := now.Add(-confProbeQuiet - confLongMax)
	return max(e.o.ctl.WorstStall(from, now, true), e.o.ctl.WorstStall(from, now, false))
}

// probeReady reports whether name has been idle for confProbeIdle, with no
// fault for confProbeQuiet, each plus what the machine or Redis stalled
// meanwhile (see stalled).
func (e *confEnv) probeReady(name string, now time.Time) bool {
	stall := e.stalled(now)
	return e.o.idleFor(name, confProbeIdle+stall) && e.f.quietFor(confProbeQuiet+stall)
}

// probe takes the write of an idle name as a new owner of the direct
// Client (or quorum) with TryLock.
func (e *confEnv) probe(name string) {
	e.o.Mu.Lock()
	before := e.o.grantSeq[name]
	idleSince := e.o.lastActive[name]
	e.o.Mu.Unlock()
	_, lastFault := e.f.state()
	d := 300 * time.Millisecond
	if e.tg.Kind == ConfQuorumKind {
		// A quorum grant counts only if its nodes answered well within its
		// lease: with two copies of the suite side by side, a 300 ms probe
		// was granted on 2 of 3 nodes too late to count, and refused.
		d = 2 * time.Second
	}
	lk := confLeaseKind{desc: "lease " + d.String(), opts: []fairrw.AcquireOption{fairrw.WithLease(d)}, explicit: true, d: d}
	lease := lk.opts
	started := time.Now()
	op := "probe TryLock(" + lk.desc + ") of an idle name"
	cc := e.plainCtx(context.Background(), 5*time.Second)
	defer cc.cancel()
	gen := e.gen(0)
	h, err := e.Acquire(cc, name, e.o.newOwner(), nil, fairrw.Write, false, op, "probe", gen, lk, true, func(ctx context.Context) (confLease, string, error) {
		switch e.tg.Kind {
		case ConfQuorumKind:
			l, err := confQuorumAcquire(ctx, gen.probeQuorum.RWMutex(name), fairrw.Write, false, lease)
			if err != nil {
				return nil, "", err
			}
			return l, "", nil
		case ConfMutexKind:
			l, err := gen.Client.Mutex(name).TryLock(ctx, lease...)
			if err != nil {
				return nil, "", err
			}
			return l, l.Owner(), nil
		default:
			l, err := gen.Client.RWMutex(name).TryLock(ctx, lease...)
			if err != nil {
				return nil, "", err
			}
			return l, l.Owner(), nil
		}
	})
	e.o.count("probes", 1)
	if err == nil {
		e.o.count("probes granted", 1)
		e.unlock(rand.New(rand.NewPCG(0, 0)), h)
		return
	}
	e.o.Mu.Lock()
	after := e.o.grantSeq[name]
	e.o.Mu.Unlock()
	// The probe began with no fault for confProbeQuiet; one that fired
	// while it ran (a pause, a late copy, a reset: the probe's TryLock
	// waits through a pause) may leave Redis holding what no Lease
	// accounts for, for as long as the faults' own bounds allow (a queue
	// entry whose withdrawal the pause held back): it proves nothing.
	if !errors.Is(err, fairrw.ErrNotAcquired) || after != before || e.f.firedWithin(started, time.Now()) {
		e.o.count("probes inconclusive", 1)
		return
	}
	// Nor does one on a name idle for less than the idle bound plus what
	// the machine or Redis stalled meanwhile (the probe's own TryLock
	// included): what a cancelled acquire's attempt took in Redis lasts
	// until its give-back, which runs in the background once the caller
	// has gone, as late as the stall held it (a Redis PING took 3.1 s, with
	// two suites side by side, and a hold of a cancelled RLock outlasted
	// the idle bound).
	if stall := e.stalled(time.Now()); started.Sub(idleSince) < confProbeIdle+stall {
		e.o.count("probes inconclusive", 1)
		e.o.event(name, "probe inconclusive: refused %v after the name fell idle, with the machine or Redis stalled %v", started.Sub(idleSince).Round(time.Millisecond), stall.Round(time.Millisecond))
		return
	}
	e.o.violate("stranded-hold", name, "the name was idle (no live lease, no call in progress) since %s and the last fault ended %s, yet a new owner's TryLock was refused (%v): Redis still holds something that no live Lease accounts for. Keys of the name:%s",
		e.o.At(idleSince), e.o.At(lastFault), err, e.dumpName(name))
}
