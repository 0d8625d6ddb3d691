package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// ReadersShare: two owners hold reads together; a writer waits for both.
func ReadersShare(t *testing.T, env Env) {
	c := env.client(t)
	a, b, w := c.RWMutex(name(t)), c.RWMutex(name(t)), c.RWMutex(name(t))
	ra := lock(t, a, fairrw.Read)
	rb := granted(t, b, fairrw.Read)
	refused(t, w, fairrw.Write)
	unlock(t, ra)
	refused(t, w, fairrw.Write)
	unlock(t, rb)
	unlock(t, granted(t, w, fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// WriteExcludes: a write blocks other owners' reads and writes, in this
// client and in another one.
func WriteExcludes(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	w := lock(t, c1.RWMutex(name(t)), fairrw.Write)
	for _, m := range []*fairrw.RWMutex{c1.RWMutex(name(t)), c2.RWMutex(name(t))} {
		refused(t, m, fairrw.Read)
		refused(t, m, fairrw.Write)
	}
	unlock(t, w)
	unlock(t, granted(t, c2.RWMutex(name(t)), fairrw.Read))
	EventuallyNoKeys(t, env, name(t))
}

// ReentrantWrite: the write owner takes the write again from its Lease
// (Lease.Lock): the further hold is the same owner's, keeps its token, and
// the lock stays held until every hold is unlocked, in either order. The
// handle itself is no owner: a Lock or TryLock on it is another owner's.
func ReentrantWrite(t *testing.T, env Env) {
	c := env.client(t)
	m, other := c.RWMutex(name(t)), c.RWMutex(name(t))
	for _, outerFirst := range []bool{true, false} {
		w1 := lock(t, m, fairrw.Write)
		w2 := hold(t, w1, fairrw.Write)
		if w2.Token() != w1.Token() {
			t.Fatalf("further write: token %d, want the owner's %d", w2.Token(), w1.Token())
		}
		refused(t, m, fairrw.Write)
		refused(t, m, fairrw.Read)
		first, last := w1, w2
		if !outerFirst {
			first, last = w2, w1
		}
		unlock(t, first)
		refused(t, other, fairrw.Read)
		refused(t, m, fairrw.Write)
		alive(t, last)
		unlock(t, last)
		unlock(t, granted(t, other, fairrw.Write))
	}
	EventuallyNoKeys(t, env, name(t))
}

// ReentrantRead: an owner's further reads (Lease.RLock) count up and down,
// released in either order.
func ReentrantRead(t *testing.T, env Env) {
	c := env.client(t)
	m, w := c.RWMutex(name(t)), c.RWMutex(name(t))
	for _, outerFirst := range []bool{true, false} {
		r1 := lock(t, m, fairrw.Read)
		r2 := hold(t, r1, fairrw.Read)
		first, last := r1, r2
		if !outerFirst {
			first, last = r2, r1
		}
		unlock(t, first)
		refused(t, w, fairrw.Write)
		alive(t, last)
		unlock(t, last)
		unlock(t, granted(t, w, fairrw.Write))
	}
	EventuallyNoKeys(t, env, name(t))
}

// Downgrade: the write owner takes a read from its write Lease, releases the
// write, and keeps reading: others may read, no one may write.
func Downgrade(t *testing.T, env Env) {
	c := env.client(t)
	m, other := c.RWMutex(name(t)), c.RWMutex(name(t))
	w := lock(t, m, fairrw.Write)
	r := hold(t, w, fairrw.Read)
	if r.Token() != w.Token() {
		t.Fatalf("read under the write: token %d, want %d", r.Token(), w.Token())
	}
	refused(t, other, fairrw.Read)
	unlock(t, w)
	refused(t, other, fairrw.Write)
	refused(t, m, fairrw.Write)
	unlock(t, granted(t, other, fairrw.Read))
	unlock(t, r)
	unlock(t, granted(t, other, fairrw.Write))

	// An owner holding the write and a read under it may take the write
	// again from the write, and release the three in any order.
	w1 := lock(t, m, fairrw.Write)
	r1 := hold(t, w1, fairrw.Read)
	w2 := hold(t, w1, fairrw.Write)
	for _, l := range []*fairrw.Lease{w1, r1} {
		unlock(t, l)
		refused(t, other, fairrw.Read)
	}
	unlock(t, w2)
	unlock(t, granted(t, other, fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// NoUpgrade: a read Lease never takes the write, even as the only reader,
// and says so at once with ErrUpgrade (which wraps ErrNotAcquired), so that
// a bug is told from contention; a read under the owner's write is no
// exception. A plain Lock on the handle is another owner: it waits for the
// read, as with sync.RWMutex, and is granted once the reads are gone.
func NoUpgrade(t *testing.T, env Env) {
	c := env.client(t)
	m := c.RWMutex(name(t))
	r := lock(t, m, fairrw.Read)
	r2 := hold(t, r, fairrw.Read)
	for _, l := range []*fairrw.Lease{r, r2} {
		for _, opts := range [][]fairrw.AcquireOption{nil, {fairrw.WithLease(time.Second)}} {
			got, err := l.Lock(ctx(t), opts...)
			if !errors.Is(err, hidden.ErrUpgrade) || !errors.Is(err, fairrw.ErrNotAcquired) || got != nil {
				t.Fatalf("Lease.Lock on a read: %v, %v; want ErrUpgrade and ErrNotAcquired", got, err)
			}
		}
	}
	// Contention is not an upgrade.
	if _, err := m.TryLock(ctx(t)); !errors.Is(err, fairrw.ErrNotAcquired) || errors.Is(err, hidden.ErrUpgrade) {
		t.Fatalf("TryLock beside a read: %v, want ErrNotAcquired and not ErrUpgrade", err)
	}
	waiting := acquireAsync(ctx(t), m, fairrw.Write)
	blocked(t, waiting)
	unlock(t, r)
	blocked(t, waiting)
	unlock(t, r2)
	w := receive(t, waiting)
	rd := hold(t, w, fairrw.Read)
	if _, err := rd.Lock(ctx(t)); !errors.Is(err, hidden.ErrUpgrade) || !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("Lease.Lock on a read under the owner's write: %v, want ErrUpgrade and ErrNotAcquired", err)
	}
	unlock(t, rd)
	alive(t, w)
	unlock(t, w)
	EventuallyNoKeys(t, env, name(t))
}

// UnlockTwice: a lease is unlocked once; the second Unlock is ErrNotHeld and
// does not release another hold of the same owner. A lease that ended takes
// no further hold (ErrNotHeld), for itself or its owner.
func UnlockTwice(t *testing.T, env Env) {
	c := env.client(t)
	m, other := c.RWMutex(name(t)), c.RWMutex(name(t))
	w1 := lock(t, m, fairrw.Write)
	w2 := hold(t, w1, fairrw.Write)
	unlock(t, w1)
	if err := w1.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
	if err := w1.Err(); err != nil {
		t.Fatalf("Err after Unlock: %v, want nil", err)
	}
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		if l, err := further(ctx(t), w1, mode); !errors.Is(err, fairrw.ErrNotHeld) || l != nil {
			t.Fatalf("further %s from an unlocked lease: %v, %v; want ErrNotHeld", mode, l, err)
		}
	}
	refused(t, other, fairrw.Write)
	alive(t, w2)
	unlock(t, w2)
	unlock(t, granted(t, other, fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// WriterWaitsForWriter: a blocked Lock is granted after the holder unlocks,
// whether the two share a handle, are two handles of one client, or are in
// two clients.
func WriterWaitsForWriter(t *testing.T, env Env) {
	for _, where := range []string{"handle", "client", "clients"} {
		c1 := env.client(t)
		c2 := c1
		if where == "clients" {
			c2 = env.client(t)
		}
		n := name(t) + ":" + where
		m1 := c1.RWMutex(n)
		m2 := m1
		if where != "handle" {
			m2 = c2.RWMutex(n)
		}
		held := lock(t, m1, fairrw.Write)
		waiting := acquireAsync(ctx(t), m2, fairrw.Write)
		blocked(t, waiting)
		unlock(t, held)
		got := receive(t, waiting)
		// A write passed within its Client's cohort holds under the owner
		// it was passed from (see fairrw.WithCohorts); any other is a new
		// owner. Either way its token is greater.
		passed := hidden.WokenBy(got) == "cohort"
		if passed && where == "clients" {
			t.Fatalf("%s: a write passed from another Client's cohort", where)
		}
		if (got.Owner() == held.Owner()) != passed || got.Token() <= held.Token() {
			t.Fatalf("%s: next writer owner %s token %d (woken by %q) after owner %s token %d; want a greater token, and another owner unless passed in a cohort", where, got.Owner(), got.Token(), hidden.WokenBy(got), held.Owner(), held.Token())
		}
		unlock(t, got)
		EventuallyNoKeys(t, env, n)
	}
}

// ReadersWakeTogether: readers waiting on a writer all get in when it
// unlocks, and then hold together.
func ReadersWakeTogether(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	held := lock(t, c1.RWMutex(name(t)), fairrw.Write)
	var waiting []<-chan result
	for i := range 4 {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		waiting = append(waiting, acquireAsync(ctx(t), c.RWMutex(name(t)), fairrw.Read))
	}
	blocked(t, waiting[0])
	unlock(t, held)
	var leases []*fairrw.Lease
	for _, ch := range waiting {
		leases = append(leases, receive(t, ch))
	}
	for _, l := range leases {
		alive(t, l)
	}
	for _, l := range leases {
		unlock(t, l)
	}
	EventuallyNoKeys(t, env, name(t))
}

// CancelledWaitLeavesNothing: a Lock whose ctx ends returns promptly with an
// error wrapping ctx.Err(), holds nothing, and leaves nothing in Redis.
func CancelledWaitLeavesNothing(t *testing.T, env Env) {
	c := env.client(t)
	held := lock(t, c.RWMutex(name(t)), fairrw.Write)
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		cctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		l, err := Acquire(cctx, c.RWMutex(name(t)), mode, true)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || l != nil {
			t.Fatalf("%s with expiring ctx: %v, %v; want DeadlineExceeded", mode, l, err)
		}
	}
	cctx, cancel := context.WithCancel(context.Background())
	waiting := acquireAsync(cctx, c.RWMutex(name(t)), fairrw.Write)
	blocked(t, waiting)
	cancel()
	if r := <-waiting; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v, want context.Canceled", r.err)
	}
	unlock(t, held)
	EventuallyNoKeys(t, env, name(t))
}

// ExplicitLeaseExpires: a lease taken WithLease is not renewed: it ends with
// ErrLeaseLost when it runs out, takes no further hold after that, and a
// waiter gets the lock without any notification from the holder. The
// watchdog keeps a lease alive past the lease time.
func ExplicitLeaseExpires(t *testing.T, env Env) {
	c := env.client(t)
	l := lock(t, c.RWMutex(name(t)), fairrw.Write, fairrw.WithLease(300*time.Millisecond))
	waiting := acquireAsync(ctx(t), c.RWMutex(name(t)), fairrw.Write)
	if err := waitDone(t, l, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
		t.Fatalf("expired lease: Err = %v, want ErrLeaseLost", err)
	}
	next := receive(t, waiting)
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		if got, err := further(ctx(t), l, mode); !errors.Is(err, fairrw.ErrNotHeld) || got != nil {
			t.Fatalf("further %s from an expired lease: %v, %v; want ErrNotHeld", mode, got, err)
		}
	}
	alive(t, next)
	unlock(t, next)
	EventuallyNoKeys(t, env, name(t))
}

// QueuedWriteLeavesNothing: a write granted after it waited in Redis (its
// queue entry there lived a queue lease) leaves nothing of the name once
// its short lease has run out: the lock's keys live as long as what they
// hold, not as long as the queue entry the writer had. Granted by the
// holder's release, and by its own attempt once the holder's lease ran
// out.
func QueuedWriteLeavesNothing(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	for _, released := range []bool{true, false} {
		n := fmt.Sprintf("%s:released=%v", name(t), released)
		var opts []fairrw.AcquireOption
		if !released {
			opts = append(opts, fairrw.WithLease(300*time.Millisecond))
		}
		held := lock(t, c1.RWMutex(n), fairrw.Write, opts...)
		waiting := acquireAsync(ctx(t), c2.RWMutex(n), fairrw.Write, fairrw.WithLease(300*time.Millisecond))
		time.Sleep(100 * time.Millisecond) // it queues
		if released {
			unlock(t, held)
		} else if err := waitDone(t, held, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
			t.Fatalf("the holder's short lease: Err = %v, want ErrLeaseLost", err)
		}
		next := receive(t, waiting)
		if err := waitDone(t, next, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
			t.Fatalf("the queued writer's short lease: Err = %v, want ErrLeaseLost", err)
		}
		EventuallyNothing(t, env, n, 5*time.Second)
	}
}

// WatchdogKeepsLeaseAlive: a lease without WithLease outlives several lease
// times while its Client renews it, and so does a further hold taken from
// it (a downgrade read here).
func WatchdogKeepsLeaseAlive(t *testing.T, env Env) {
	// Two seconds, not a tiny lease: a loaded machine running a renewal
	// late must not lose the holds this scenario needs alive; and a try
	// that failed while the machine or Redis stalled for a renew interval
	// runs again (see retried). As FurtherHoldsEach's: with one CPU burner
	// per core, a container's Redis answered PINGs up to 1.34 s late, and
	// each of three tries lost its 1 s lease in a stall of 0.8-1.2 s.
	const lease = 2 * time.Second
	st, watched := watchStalls(t, env.Raw)
	c := env.client(t, fairrw.WithLeaseTime(lease), watched)
	st.retried(t, lease/3, func(t testing.TB, try int) {
		n := tryName(name(t), try)
		m, other := c.RWMutex(n), c.RWMutex(n)
		w := lock(t, m, fairrw.Write)
		r := hold(t, w, fairrw.Read)
		time.Sleep(3 * lease)
		alive(t, w)
		alive(t, r)
		refused(t, other, fairrw.Read)
		unlock(t, w)
		time.Sleep(2 * lease)
		alive(t, r)
		refused(t, other, fairrw.Write)
		unlock(t, r)
		EventuallyNoKeys(t, env, n)
	}, func(try int) { forgetRW(t, env, c, tryName(name(t), try)) })
}

// LostLeaseIsReported: when the lock's keys vanish from Redis, the holder
// learns it by the next renewal: Done closes with ErrLeaseLost, and Unlock
// says ErrNotHeld.
func LostLeaseIsReported(t *testing.T, env Env) {
	c := env.client(t, fairrw.WithLeaseTime(600*time.Millisecond))
	m := c.RWMutex(name(t))
	w := lock(t, m, fairrw.Write)
	r := lock(t, c.RWMutex(name(t)+":reader"), fairrw.Read)
	keys := append(keysOf(t, env, name(t)), keysOf(t, env, name(t)+":reader")...)
	for _, k := range keys {
		if err := env.Raw.Do(ctx(t), env.Raw.B().Del().Key(k).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []*fairrw.Lease{w, r} {
		if err := waitDone(t, l, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
			t.Fatalf("lease whose keys were deleted: Err = %v, want ErrLeaseLost", err)
		}
		if err := l.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
			t.Fatalf("Unlock of a lost lease: %v, want ErrNotHeld", err)
		}
	}
}

// DeadClientFreesLock: a client that goes away without unlocking loses its
// lock within the lease time, and a waiter elsewhere then gets it.
func DeadClientFreesLock(t *testing.T, env Env) {
	// A lease a loaded machine's renewals keep until the Close (400 ms
	// ran out before it, under two suites side by side), short enough
	// that the waiters below get the locks soon after it.
	dead := env.client(t, fairrw.WithLeaseTime(1500*time.Millisecond))
	live := env.client(t)
	w := lock(t, dead.RWMutex(name(t)), fairrw.Write)
	r := lock(t, dead.RWMutex(name(t)+":r"), fairrw.Read)
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*fairrw.Lease{w, r} {
		if err := l.Err(); !errors.Is(err, fairrw.ErrLeaseLost) || !errors.Is(err, fairrw.ErrClosed) {
			t.Fatalf("lease after Close: %v, want ErrLeaseLost and ErrClosed", err)
		}
	}
	unlock(t, lock(t, live.RWMutex(name(t)), fairrw.Write))
	unlock(t, lock(t, live.RWMutex(name(t)+":r"), fairrw.Write))
	EventuallyNoKeys(t, env, name(t))
}

// UnlockAfterExpiry: unlocking a lease that ran out fails with ErrNotHeld,
// and does not release a hold someone else took since.
func UnlockAfterExpiry(t *testing.T, env Env) {
	c := env.client(t)
	first := lock(t, c.RWMutex(name(t)), fairrw.Write, fairrw.WithLease(100*time.Millisecond))
	waitDone(t, first, 5*time.Second)
	next := lock(t, c.RWMutex(name(t)), fairrw.Write)
	if err := first.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock after expiry: %v, want ErrNotHeld", err)
	}
	alive(t, next)
	refused(t, c.RWMutex(name(t)), fairrw.Read)
	unlock(t, next)
	EventuallyNoKeys(t, env, name(t))
}

// CloseWakesWaiters: Close wakes every waiter with ErrClosed, ends held
// leases, and refuses every later call.
func CloseWakesWaiters(t *testing.T, env Env) {
	holder := env.client(t)
	c := env.client(t)
	held := lock(t, holder.RWMutex(name(t)), fairrw.Write)
	var waiting []<-chan result
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write, fairrw.Write} {
		waiting = append(waiting, acquireAsync(ctx(t), c.RWMutex(name(t)), mode))
	}
	own := lock(t, c.RWMutex(name(t)+":own"), fairrw.Write)
	blocked(t, waiting[0])
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range waiting {
		if r := <-ch; !errors.Is(r.err, fairrw.ErrClosed) {
			t.Fatalf("waiter after Close: %v, want ErrClosed", r.err)
		}
	}
	if !errors.Is(own.Err(), fairrw.ErrClosed) {
		t.Fatalf("held lease after Close: %v, want ErrClosed", own.Err())
	}
	if _, err := c.RWMutex(name(t)).TryRLock(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("TryRLock after Close: %v, want ErrClosed", err)
	}
	if err := own.Unlock(ctx(t)); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("Unlock after Close: %v, want ErrClosed", err)
	}
	unlock(t, held)
}

// InvalidInputChangesNothing: bad names and options get clear errors before
// anything reaches Redis.
func InvalidInputChangesNothing(t *testing.T, env Env) {
	c := env.client(t)
	bad := []string{"", "a{b", "x}y", "{}", string(make([]byte, hidden.MaxNameLength+1))}
	for _, n := range bad {
		_, err := c.RWMutex(n).Lock(ctx(t))
		if !errors.Is(err, fairrw.ErrInvalidName) {
			t.Errorf("Lock(%.20q): %v, want ErrInvalidName", n, err)
		}
	}
	m := c.RWMutex(name(t))
	for _, d := range []time.Duration{0, -time.Second, time.Microsecond} {
		if _, err := m.TryLock(ctx(t), fairrw.WithLease(d)); !errors.Is(err, fairrw.ErrInvalidOption) {
			t.Errorf("WithLease(%v): %v, want ErrInvalidOption", d, err)
		}
	}
	if err := m.ForceUnlock(ctx(t), fairrw.Mode(9)); !errors.Is(err, fairrw.ErrInvalidOption) {
		t.Errorf("ForceUnlock(9): %v, want ErrInvalidOption", err)
	}
	if keys := keysOf(t, env, name(t)); len(keys) != 0 {
		t.Fatalf("invalid calls wrote %v", keys)
	}
	// A further hold with an invalid option is refused before any command:
	// the owner's hold stays as it was.
	held := lock(t, c.RWMutex(name(t)+":held"), fairrw.Write)
	keepFence(t, env, name(t)+":held") // it expired between the snapshots on a loaded machine
	before := lockState(t, env, name(t)+":held")
	for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
		if l, err := further(ctx(t), held, mode, fairrw.WithLease(0)); !errors.Is(err, fairrw.ErrInvalidOption) || l != nil {
			t.Errorf("further %s WithLease(0): %v, %v; want ErrInvalidOption", mode, l, err)
		}
	}
	wantState(t, env, name(t)+":held", before)
	alive(t, held)
	unlock(t, held)
	for _, k := range []string{"a{b", "x}y", "{}"} {
		n, err := env.Raw.Do(ctx(t), env.Raw.B().Exists().Key(k).Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("invalid name %q reached Redis: exists=%d, %v", k, n, err)
		}
	}
}

// Hammer is sync's HammerRWMutex over Redis: readers add 1 to a shared
// counter and writers 10000, each checking that it is alone with its kind.
func Hammer(t *testing.T, env Env) {
	clients := []*fairrw.Client{env.client(t), env.client(t)}
	hammer(t, env, func(i int) *fairrw.RWMutex { return clients[i%2].RWMutex(name(t)) })
}

// hammer runs eight goroutines of hammer rounds, goroutine i on handle(i),
// and then checks that nothing is left.
func hammer(t *testing.T, env Env, handle func(i int) *fairrw.RWMutex) {
	const workers, rounds = 8, 15
	var activity atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		m := handle(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := hammerRound(ctx(t), m, (i+r)%3 == 0, &activity); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	EventuallyNoKeys(t, env, name(t))
}

func hammerRound(c context.Context, m *fairrw.RWMutex, write bool, activity *atomic.Int64) error {
	if write {
		l, err := m.Lock(c)
		if err != nil {
			return err
		}
		if n := activity.Add(10000); n != 10000 {
			return errors.New("writer not alone: activity " + itoa(n))
		}
		time.Sleep(time.Millisecond)
		activity.Add(-10000)
		return l.Unlock(c)
	}
	l, err := m.RLock(c)
	if err != nil {
		return err
	}
	if n := activity.Add(1); n >= 10000 {
		return errors.New("reader beside a writer: activity " + itoa(n))
	}
	time.Sleep(time.Millisecond)
	activity.Add(-1)
	return l.Unlock(c)
}

// SharedHandleExcludes: goroutines that share one handle exclude each other
// as they would on a sync.RWMutex: every acquire is a new hold. First by
// hand (a held write refuses the handle's own TryLock and TryRLock; two
// reads on it are two holds, each keeping the write out until its own
// Unlock, though they may share one read hold in Redis, under one owner:
// fairrw.WithCohorts), then sync's HammerRWMutex with eight goroutines on
// the one handle.
func SharedHandleExcludes(t *testing.T, env Env) {
	c := env.client(t)
	m := c.RWMutex(name(t))
	w := lock(t, m, fairrw.Write)
	refused(t, m, fairrw.Write)
	refused(t, m, fairrw.Read)
	unlock(t, w)
	r1 := lock(t, m, fairrw.Read)
	r2 := granted(t, m, fairrw.Read)
	if r1 == r2 {
		t.Fatal("two reads on one handle returned one Lease")
	}
	refused(t, m, fairrw.Write)
	unlock(t, r1)
	select {
	case <-r2.Done():
		t.Fatalf("the second read ended with the first one's Unlock: %v", r2.Err())
	default:
	}
	refused(t, m, fairrw.Write)
	unlock(t, r2)
	hammer(t, env, func(int) *fairrw.RWMutex { return m })
}
