package deadline

import (
	"context"
	"sync"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestDeadline runs every blocking call of every policy's RWMutex, of the
// Mutex and of a quorum of three nodes (writer-preferring) under each fault
// that applies to it, each case on a fresh Client, with a 300ms deadline:
//
//   - a-frozen: Redis frozen (SIGSTOP) before the call;
//   - b-waiting: a Lock (or RLock) already waiting, the lock held by another
//     owner, when Redis freezes; its deadline is 300ms after the freeze;
//   - c-stopped: Redis stopped (connections refused) before the call.
//
// Each case logs "deadline: policy=P call=C case=F overrun=D err=E" and
// fails when the call returned more than dlBound after its deadline, when it
// returned at its deadline with an error that does not wrap the ctx's
// (context.DeadlineExceeded), when an Unlock's error does not wrap it at
// all (the release is not confirmed in time: it goes on in the background;
// a quorum Unlock may instead return ErrNotHeld early),
// or when it succeeded. A call still running dlHang after its deadline is
// reported hung, and Redis brought back to let it end.
//
// Then Redis comes back (SIGCONT, or a restart with the data it had: AOF),
// what the case's setup held is released, and nothing may stay held past
// one lease (2s, the default unlock timeout of 5s kept): within the lease
// and a margin a fresh Client's TryLock of the write is granted (logged as
// "deadline-free: ... free-after=D"), then Inspect shows no holder and no
// waiter and no key of the lock is left but those that expire by
// themselves (the last fencing token, give-up markers, unlock latches).
//
// The targets run concurrently, each on servers of its own, its cases one
// after another; at the end the worst overrun per call and target is
// logged as a table ("deadline-worst:" lines). Run one target or call with
// -run, e.g. TestDeadline/mutex/Unlock.
func TestDeadline(t *testing.T) {
	report := &dlReport{}
	var wg sync.WaitGroup
	for _, tg := range dlTargets() {
		wg.Go(func() {
			t.Run(tg.name, func(t *testing.T) {
				e := newDLEnv(t, tg, report)
				for _, s := range dlSpecsOf(tg.kind) {
					for _, f := range s.faults {
						t.Run(s.call+"/"+string(f), func(t *testing.T) { e.run(t, s, f) })
					}
				}
			})
		})
	}
	wg.Wait()
	report.log(t)
}

// dlSpecsOf returns the calls tested on a target of kind k.
func dlSpecsOf(k dlKind) []dlSpec {
	switch k {
	case dlMutexKind:
		return dlMutexSpecs()
	case dlQuorumKind:
		return dlQuorumSpecs()
	}
	return dlRWSpecs()
}

// dlRWSpecs are the calls of a read-write lock.
func dlRWSpecs() []dlSpec {
	acquire := func(call string, faults []dlFault, do func(context.Context, *fairrw.RWMutex) (*fairrw.Lease, error)) dlSpec {
		return dlSpec{call: call, faults: faults, setup: func(t *testing.T, e *dlEnv, name string, f dlFault) dlCall {
			var hs dlHolds
			if f == dlWaiting {
				hs.add(e.otherWrite(t, name))
			}
			m := e.client(t).RWMutex(name)
			return dlCall{
				run:   func(ctx context.Context) error { l, err := do(ctx, m); hs.lease(l); return err },
				after: hs.release,
			}
		}}
	}
	further := func(call string, held fairrw.Mode, do func(context.Context, *fairrw.Lease) (*fairrw.Lease, error)) dlSpec {
		return dlSpec{call: call, faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			l := itest.MustLock(t, e.client(t).RWMutex(name), held)
			hs.lease(l)
			return dlCall{
				run:   func(ctx context.Context) error { nl, err := do(ctx, l); hs.lease(nl); return err },
				after: hs.release,
			}
		}}
	}
	shutdown := func(call string, client func(*testing.T, *dlEnv) *fairrw.Client) dlSpec {
		return dlSpec{call: call, faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			c := client(t, e)
			itest.MustLock(t, c.RWMutex(name), fairrw.Write)
			itest.MustLock(t, c.RWMutex(name+":read"), fairrw.Read)
			return dlCall{run: c.Shutdown, after: func() {}}
		}}
	}
	return []dlSpec{
		acquire("Lock", dlWaits, func(ctx context.Context, m *fairrw.RWMutex) (*fairrw.Lease, error) { return m.Lock(ctx) }),
		acquire("RLock", dlWaits, func(ctx context.Context, m *fairrw.RWMutex) (*fairrw.Lease, error) { return m.RLock(ctx) }),
		acquire("TryLock", dlNoWait, func(ctx context.Context, m *fairrw.RWMutex) (*fairrw.Lease, error) { return m.TryLock(ctx) }),
		acquire("TryRLock", dlNoWait, func(ctx context.Context, m *fairrw.RWMutex) (*fairrw.Lease, error) { return m.TryRLock(ctx) }),
		further("Lease.Lock", fairrw.Write, func(ctx context.Context, l *fairrw.Lease) (*fairrw.Lease, error) { return l.Lock(ctx) }),
		further("Lease.RLock", fairrw.Read, func(ctx context.Context, l *fairrw.Lease) (*fairrw.Lease, error) { return l.RLock(ctx) }),
		{call: "Unlock", faults: dlNoWait, strict: true, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			l := itest.MustLock(t, e.client(t).RWMutex(name), fairrw.Write)
			return dlCall{run: l.Unlock, after: func() {}}
		}},
		shutdown("Shutdown", func(t *testing.T, e *dlEnv) *fairrw.Client { return e.client(t) }),
		shutdown("Shutdown-shared-rueidis", func(t *testing.T, e *dlEnv) *fairrw.Client { return e.sharedClient(t) }),
		{call: "Client.Inspect", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			hs.add(e.otherWrite(t, name))
			c := e.client(t)
			return dlCall{run: func(ctx context.Context) error { _, err := c.Inspect(ctx, name); return err }, after: hs.release}
		}},
		{call: "Inspect", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			hs.add(e.otherWrite(t, name))
			c := e.client(t)
			return dlCall{run: func(ctx context.Context) error { _, err := c.Inspect(ctx, name); return err }, after: hs.release}
		}},
		{call: "ForceUnlock", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			hs.add(e.otherWrite(t, name))
			m := e.client(t).RWMutex(name)
			return dlCall{run: func(ctx context.Context) error { return m.ForceUnlock(ctx, fairrw.Write) }, after: hs.release}
		}},
	}
}

// dlMutexSpecs are the calls of a Mutex (Redisson's RLock).
func dlMutexSpecs() []dlSpec {
	return []dlSpec{
		{call: "Lock", faults: dlWaits, setup: func(t *testing.T, e *dlEnv, name string, f dlFault) dlCall {
			var hs dlHolds
			if f == dlWaiting {
				hs.add(e.otherWrite(t, name))
			}
			m := e.client(t).Mutex(name)
			return dlCall{run: func(ctx context.Context) error { l, err := m.Lock(ctx); hs.lease(l); return err }, after: hs.release}
		}},
		{call: "TryLock", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			m := e.client(t).Mutex(name)
			return dlCall{run: func(ctx context.Context) error { l, err := m.TryLock(ctx); hs.lease(l); return err }, after: hs.release}
		}},
		{call: "Lease.Lock", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			l := itest.MustLockMutex(t, e.client(t).Mutex(name))
			hs.lease(l)
			return dlCall{run: func(ctx context.Context) error { nl, err := l.Lock(ctx); hs.lease(nl); return err }, after: hs.release}
		}},
		{call: "Unlock", faults: dlNoWait, strict: true, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			l := itest.MustLockMutex(t, e.client(t).Mutex(name))
			return dlCall{run: l.Unlock, after: func() {}}
		}},
		{call: "Shutdown", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			c := e.client(t)
			itest.MustLockMutex(t, c.Mutex(name))
			return dlCall{run: c.Shutdown, after: func() {}}
		}},
		{call: "Inspect", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			hs.add(e.otherWrite(t, name))
			c := e.client(t)
			return dlCall{run: func(ctx context.Context) error { _, err := c.Inspect(ctx, name); return err }, after: hs.release}
		}},
		{call: "ForceUnlock", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			var hs dlHolds
			hs.add(e.otherWrite(t, name))
			m := e.client(t).Mutex(name)
			return dlCall{run: m.ForceUnlock, after: hs.release}
		}},
	}
}

// dlQuorumSpecs are the calls of a quorum lock; every node suffers the
// fault.
func dlQuorumSpecs() []dlSpec {
	acquire := func(call string, faults []dlFault, do func(context.Context, *fairrw.QuorumRWMutex) (*fairrw.Lease, error)) dlSpec {
		return dlSpec{call: call, faults: faults, setup: func(t *testing.T, e *dlEnv, name string, f dlFault) dlCall {
			var hs dlHolds
			if f == dlWaiting {
				hs.add(e.otherWrite(t, name))
			}
			m := e.quorum(t).RWMutex(name)
			return dlCall{run: func(ctx context.Context) error { l, err := do(ctx, m); hs.quorum(l); return err }, after: hs.release}
		}}
	}
	return []dlSpec{
		acquire("Lock", dlWaits, func(ctx context.Context, m *fairrw.QuorumRWMutex) (*fairrw.Lease, error) { return m.Lock(ctx) }),
		acquire("RLock", dlWaits, func(ctx context.Context, m *fairrw.QuorumRWMutex) (*fairrw.Lease, error) { return m.RLock(ctx) }),
		acquire("TryLock", dlNoWait, func(ctx context.Context, m *fairrw.QuorumRWMutex) (*fairrw.Lease, error) { return m.TryLock(ctx) }),
		acquire("TryRLock", dlNoWait, func(ctx context.Context, m *fairrw.QuorumRWMutex) (*fairrw.Lease, error) {
			return m.TryRLock(ctx)
		}),
		// Not strict: a quorum Unlock that reaches no majority returns
		// ErrNotHeld (at once when every node refuses connections).
		{call: "Unlock", faults: dlNoWait, setup: func(t *testing.T, e *dlEnv, name string, _ dlFault) dlCall {
			l, err := e.quorum(t).RWMutex(name).Lock(itest.TestCtx(t))
			if err != nil {
				t.Fatalf("quorum Lock %s: %v", name, err)
			}
			return dlCall{run: l.Unlock, after: func() {}}
		}},
	}
}
