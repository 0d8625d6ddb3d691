package itest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// fTarget is what a finding runs over: a read-write lock under one policy,
// or the Mutex (Redisson's RLock format; its Client's policy is Redisson).
type FTarget struct {
	Policy fairrw.Policy
	Mutex  bool
}

func (tg FTarget) String() string {
	if tg.Mutex {
		return "mutex"
	}
	return tg.Policy.String()
}

// modes are the hold modes the target has.
func (tg FTarget) Modes() []fairrw.Mode {
	if tg.Mutex {
		return []fairrw.Mode{fairrw.Write}
	}
	return []fairrw.Mode{fairrw.Write, fairrw.Read}
}

// fRWTargets is every read-write lock policy.
func FRWTargets() []FTarget {
	var out []FTarget
	for _, p := range Policies {
		out = append(out, FTarget{Policy: p})
	}
	return out
}

// fAllTargets is every policy and the Mutex.
func FAllTargets() []FTarget {
	return append(FRWTargets(), FTarget{Policy: fairrw.Redisson(), Mutex: true})
}

// fClient is a Client of the target's policy on r, with client tracking
// (RESP3), closed at cleanup.
func FClient(t *testing.T, r *redistest.Redis, tg FTarget, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return NewClient(t, r, Transports[0], append([]fairrw.Option{fairrw.WithPolicy(tg.Policy)}, opts...)...)
}

// fRaw is a plain client on r, to look at Redis.
func FRaw(t *testing.T, r *redistest.Redis) rueidis.Client {
	t.Helper()
	return r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
}

// fOwner is one lock owner: a handle of its own.
type FOwner struct {
	rw *fairrw.RWMutex
	mx *fairrw.Mutex
}

// owner returns a new owner of name on c.
func (tg FTarget) Owner(c *fairrw.Client, name string) FOwner {
	if tg.Mutex {
		return FOwner{mx: c.Mutex(name)}
	}
	return FOwner{rw: c.RWMutex(name)}
}

// acquire takes a first hold of mode: Lock/RLock with wait, TryLock/TryRLock
// without.
func (o FOwner) Acquire(ctx context.Context, mode fairrw.Mode, wait bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	if o.mx != nil {
		if mode != fairrw.Write {
			return nil, fmt.Errorf("a mutex has no %s mode", mode)
		}
		if wait {
			return o.mx.Lock(ctx, opts...)
		}
		return o.mx.TryLock(ctx, opts...)
	}
	return locktest.Acquire(ctx, o.rw, mode, wait, opts...)
}

// further takes a further hold of mode from l, a live Lease of this owner
// (through the adapter).
func (o FOwner) Further(ctx context.Context, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case o.mx != nil:
		return l.Lock(ctx, opts...)
	case mode == fairrw.Write:
		return l.Lock(ctx, opts...)
	default:
		return l.RLock(ctx, opts...)
	}
}

// fMust fails t unless err is nil.
func FMust(t *testing.T, what string, l *fairrw.Lease, err error) *fairrw.Lease {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return l
}

// fFirst takes a first hold of mode for a new owner and returns both.
func FFirst(t *testing.T, tg FTarget, c *fairrw.Client, name string, mode fairrw.Mode, opts ...fairrw.AcquireOption) (FOwner, *fairrw.Lease) {
	t.Helper()
	o := tg.Owner(c, name)
	l, err := o.Acquire(TestCtx(t), mode, true, opts...)
	return o, FMust(t, fmt.Sprintf("first %s of %q", mode, name), l, err)
}

// fFurther takes a further hold of mode from l.
func FFurther(t *testing.T, o FOwner, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	got, err := o.Further(TestCtx(t), l, mode, opts...)
	return FMust(t, fmt.Sprintf("further %s from the owner's %s Lease of %q", mode, hidden.Mode(l), hidden.Name(l)), got, err)
}

// FUnlock unlocks l and fails t (naming the finding) unless Unlock returns
// nil, or l's Deadline had passed by the time it returned: the tests unlock
// a Lease shortly before its Deadline (after checking that it excludes
// others until then), and a loaded machine can hold the Unlock up past it
// (two suites side by side stalled goroutines for seconds), when the Lease
// rightly reports itself lost. An Unlock that fails with time left is the
// library's.
func FUnlock(t *testing.T, finding string, l *fairrw.Lease) {
	t.Helper()
	err := l.Unlock(TestCtx(t))
	if err == nil {
		return
	}
	// A watchdog Lease that the renewals did not confirm ("not confirmed
	// before its deadline") is the library's too, whenever it ends.
	ranOut := (errors.Is(err, fairrw.ErrLeaseLost) || errors.Is(err, fairrw.ErrNotHeld)) && !strings.Contains(err.Error(), "not confirmed")
	if late := time.Since(l.Deadline()); late >= 0 && ranOut {
		t.Logf("%s: the Unlock of the %s Lease of %q returned %v past its Deadline: %v", finding, hidden.Mode(l), hidden.Name(l), late.Round(time.Millisecond), err)
		return
	}
	t.Fatalf("%s: Unlock of a live %s Lease of %q: %v", finding, hidden.Mode(l), hidden.Name(l), err)
}

// fAwaitDone waits for l to end (its own lease running out), at most within.
func FAwaitDone(t *testing.T, l *fairrw.Lease, within time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(within):
		t.Fatalf("the %s Lease of %q did not end within %v", hidden.Mode(l), hidden.Name(l), within)
	}
}

// fExcludedWhileLive polls, until live's Deadline (less a margin), that a new
// owner is refused each of modes in turn. It fails t, naming the finding, as
// soon as another owner is granted while live has not passed its Deadline,
// or if live ends before it.
func FExcludedWhileLive(t *testing.T, finding string, tg FTarget, c *fairrw.Client, raw rueidis.Client, live *fairrw.Lease, modes ...fairrw.Mode) {
	t.Helper()
	const margin = 150 * time.Millisecond
	name := hidden.Name(live)
	began := time.Now()
	// The checks stop margin plus the longest turn so far before the
	// Deadline, so that the caller's next step (the live Lease's Unlock)
	// comes before it: on a loaded machine one turn (a read of the keys,
	// a try, a 50 ms sleep) took longer than margin alone, and the Lease
	// ran out under the Unlock that followed.
	var turn time.Duration
	for i := 0; time.Until(live.Deadline()) > margin+turn; i++ {
		turnBegan := time.Now()
		select {
		case <-live.Done():
			t.Fatalf("%s: the owner's live %s Lease of %q ended %v before its Deadline: %v",
				finding, hidden.Mode(live), name, time.Until(live.Deadline()).Round(time.Millisecond), live.Err())
		default:
		}
		mode := modes[i%len(modes)]
		keys := FDescribe(t, raw, name)
		l, err := tg.Owner(c, name).Acquire(TestCtx(t), mode, false)
		left := time.Until(live.Deadline())
		if err == nil {
			_ = l.Unlock(TestCtx(t))
			if left > 0 {
				t.Fatalf("%s: another owner got the %s of %q %v into the check, while a live %s Lease of the first owner holds it %v more (until its Deadline); keys just before: %s",
					finding, mode, name, time.Since(began).Round(time.Millisecond), hidden.Mode(live), left.Round(time.Millisecond), keys)
			}
			return
		}
		if !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Fatalf("%s: another owner's try of the %s of %q: %v, want ErrNotAcquired", finding, mode, name, err)
		}
		time.Sleep(50 * time.Millisecond)
		turn = max(turn, time.Since(turnBegan))
	}
	if time.Since(began) < 100*time.Millisecond {
		t.Fatalf("harness: the live Lease of %q had no time left to check (%v)", name, time.Until(live.Deadline()))
	}
}

// fFreeNow checks that the lock is free at once: a new owner's TryLock (the
// write, which every hold excludes) succeeds.
func FFreeNow(t *testing.T, finding string, tg FTarget, c *fairrw.Client, raw rueidis.Client, name string) {
	t.Helper()
	l, err := tg.Owner(c, name).Acquire(TestCtx(t), fairrw.Write, false)
	if err != nil {
		t.Fatalf("%s: every live Lease of the owner was unlocked (nil errors), yet another owner's TryLock of %q is refused: %v; keys: %s",
			finding, name, err, FDescribe(t, raw, name))
	}
	if err := l.Unlock(TestCtx(t)); err != nil {
		t.Fatalf("unlock of the other owner's write of %q: %v", name, err)
	}
}

// fKeys lists the keys in Redis that mention part ("" for every key).
func FKeys(t testing.TB, raw rueidis.Client, part string) []string {
	t.Helper()
	all, err := raw.Do(TestCtx(t), raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	var out []string
	for _, k := range all {
		if strings.Contains(k, part) {
			out = append(out, k)
		}
	}
	return out
}

// fPTTL returns key's PTTL in milliseconds (-1: no TTL, -2: missing).
func FPTTL(t testing.TB, raw rueidis.Client, key string) int64 {
	t.Helper()
	n, err := raw.Do(TestCtx(t), raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// fDescribe lists the keys mentioning name with their PTTL, for failure
// reports.
func FDescribe(t testing.TB, raw rueidis.Client, name string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range FKeys(t, raw, name) {
		fmt.Fprintf(&b, "%s (pttl %dms", k, FPTTL(t, raw, k))
		if h, err := raw.Do(TestCtx(t), raw.B().Hgetall().Key(k).Build()).AsStrMap(); err == nil {
			fmt.Fprintf(&b, ", hash %v", h)
		}
		b.WriteString(") ")
	}
	if b.Len() == 0 {
		return "none"
	}
	return strings.TrimSpace(b.String())
}

// fNoKeyWithoutTTL fails t if a key mentioning part has no TTL.
func FNoKeyWithoutTTL(t *testing.T, finding string, raw rueidis.Client, part string) {
	t.Helper()
	var forever []string
	for _, k := range FKeys(t, raw, part) {
		if FPTTL(t, raw, k) == -1 {
			forever = append(forever, k)
		}
	}
	if len(forever) > 0 {
		t.Fatalf("%s: keys without a TTL: %v", finding, forever)
	}
}
