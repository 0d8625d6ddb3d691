package behaviour

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const finding5 = "finding 5 (lost wake-up on a downgrade)"

// TestDowngradeWakesReader: Redisson policy, client tracking on (the
// default on RESP3), Client lease 20s. Owner A holds the write and a
// downgrade read; a writer W waits, then a reader R (both on one Client).
// A unlocks the write and keeps its read: R may share the lock with A's
// read now and must be granted promptly, by a wake-up (not its timer, which
// is the lock's 20s PTTL); W keeps waiting until A's read goes.
func TestDowngradeWakesReader(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	tg := itest.FTarget{Policy: fairrw.Redisson()}
	const lease = 20 * time.Second
	name := "f5:downgrade-wake"
	holderC := itest.FClient(t, r, tg, fairrw.WithLeaseTime(lease))
	waitersC := itest.FClient(t, r, tg, fairrw.WithLeaseTime(lease))
	o, w := itest.FFirst(t, tg, holderC, name, fairrw.Write)
	rd := itest.FFurther(t, o, w, fairrw.Read)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	type res struct {
		l   *fairrw.Lease
		err error
	}
	wait := func(mode fairrw.Mode) <-chan res {
		ch := make(chan res, 1)
		go func() {
			l, err := tg.Owner(waitersC, name).Acquire(ctx, mode, true)
			ch <- res{l, err}
		}()
		return ch
	}
	writer := wait(fairrw.Write)
	time.Sleep(300 * time.Millisecond) // the writer is the first waiter
	reader := wait(fairrw.Read)
	time.Sleep(300 * time.Millisecond) // both sleep now, on the lock's ~20s PTTL
	select {
	case g := <-writer:
		t.Fatalf("harness: the writer returned while the lock was held: %v", g.err)
	case g := <-reader:
		t.Fatalf("harness: the reader returned while the write was held: %v", g.err)
	default:
	}

	itest.FUnlock(t, finding5, w) // the downgrade: A keeps its read
	released := time.Now()
	select {
	case g := <-reader:
		l := itest.FMust(t, "the waiting reader after the downgrade", g.l, g.err)
		if hidden.WokenBy(l) == "timer" {
			t.Fatalf("%s: the waiting reader was granted %v after the downgrade by its timer, not by a wake-up", finding5, time.Since(released).Round(time.Millisecond))
		}
		itest.FUnlock(t, finding5, l)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the waiting reader is still asleep 5s after the downgrade let readers in (its timer is the lock's ~20s PTTL: the invalidation woke only the waiting writer, which did not pass the turn on); keys: %s",
			finding5, itest.FDescribe(t, raw, name))
	}
	select {
	case g := <-writer:
		t.Fatalf("the waiting writer returned while A still reads: %v", g.err)
	default:
	}
	itest.FUnlock(t, finding5, rd)
	select {
	case g := <-writer:
		itest.FUnlock(t, finding5, itest.FMust(t, "the waiting writer after the last read", g.l, g.err))
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the waiting writer was not granted after the last read was unlocked", finding5)
	}
}

const finding6 = "finding 6 (valid names alias other locks' keys)"

// fRawRedisError reports whether err is (or wraps) a raw Redis error reply.
func fRawRedisError(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re)
}

// TestNamesDoNotAlias: under the fair policies, distinct valid
// names are distinct locks: "x" and "{x}" exclude nothing of each other,
// and "{orders}:readers" shares no key with "orders" (both can be held at
// once, in every mode, and every Unlock returns nil); no call returns a raw
// Redis error.
func TestNamesDoNotAlias(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range fFairTargets() {
		for _, tc := range []struct {
			name, id    string
			first, then func(base string) string
		}{
			{"x-and-{x}", "plain-braced", func(b string) string { return b }, func(b string) string { return "{" + b + "}" }},
			{"{x}-and-x", "braced-plain", func(b string) string { return "{" + b + "}" }, func(b string) string { return b }},
			{"orders-and-{orders}:readers", "plain-readers", func(b string) string { return b }, func(b string) string { return "{" + b + "}:readers" }},
			{"{orders}:readers-and-orders", "readers-plain", func(b string) string { return "{" + b + "}:readers" }, func(b string) string { return b }},
		} {
			for _, firstMode := range tg.Modes() {
				for _, thenMode := range tg.Modes() {
					t.Run(tg.String()+"/"+tc.name+"/"+firstMode.String()+"-"+thenMode.String(), func(t *testing.T) {
						c := itest.FClient(t, r, tg)
						base := "f6-" + tg.String() + "-" + tc.id + "-" + firstMode.String() + "-" + thenMode.String()
						first, then := tc.first(base), tc.then(base)
						_, a := itest.FFirst(t, tg, c, first, firstMode, fairrw.WithLease(10*time.Second))
						b, err := tg.Owner(c, then).Acquire(itest.TestCtx(t), thenMode, false, fairrw.WithLease(10*time.Second))
						if err != nil {
							t.Fatalf("%s: %q held for %s, another owner's try of the %s of the distinct lock %q: %v (raw Redis error: %v); keys: %s",
								finding6, first, firstMode, thenMode, then, err, fRawRedisError(err), itest.FDescribe(t, raw, base))
						}
						if err := a.Unlock(itest.TestCtx(t)); err != nil {
							t.Fatalf("%s: Unlock of %q (%s) while %q is held: %v (raw Redis error: %v)", finding6, first, firstMode, then, err, fRawRedisError(err))
						}
						if err := b.Unlock(itest.TestCtx(t)); err != nil {
							t.Fatalf("%s: Unlock of %q (%s): %v (raw Redis error: %v)", finding6, then, thenMode, err, fRawRedisError(err))
						}
						itest.FFreeNow(t, finding6, tg, c, raw, first)
						itest.FFreeNow(t, finding6, tg, c, raw, then)
					})
				}
			}
		}
	}
}

// TestForeignKeyIsSentinel: a key of another type (a string) at a
// lock's name gives an error wrapping ErrPolicyMismatch, never a raw
// WRONGTYPE, under every policy and as the Mutex, and changes nothing.
func TestForeignKeyIsSentinel(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := itest.FRaw(t, r)
	for _, tg := range itest.FAllTargets() {
		for _, mode := range tg.Modes() {
			for _, wait := range []bool{false, true} {
				t.Run(tg.String()+"/"+mode.String()+"/wait="+map[bool]string{false: "no", true: "yes"}[wait], func(t *testing.T) {
					c := itest.FClient(t, r, tg)
					name := "f6:foreign:" + tg.String() + ":" + mode.String() + ":" + map[bool]string{false: "try", true: "lock"}[wait]
					if err := raw.Do(itest.TestCtx(t), raw.B().Set().Key(name).Value("not a lock").Build()).Error(); err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					l, err := tg.Owner(c, name).Acquire(ctx, mode, wait)
					if err == nil {
						_ = l.Unlock(itest.TestCtx(t))
						t.Fatalf("%s: acquire granted over a string key at the lock's name", finding6)
					}
					if !errors.Is(err, fairrw.ErrPolicyMismatch) || fRawRedisError(err) {
						t.Fatalf("%s: acquire over a string key at the lock's name: %v (raw Redis error: %v); want an error wrapping ErrPolicyMismatch, never a raw WRONGTYPE",
							finding6, err, fRawRedisError(err))
					}
					if v, err := raw.Do(itest.TestCtx(t), raw.B().Get().Key(name).Build()).ToString(); err != nil || v != "not a lock" {
						t.Fatalf("the string at the lock's name changed: %q, %v", v, err)
					}
				})
			}
		}
	}
}

const finding9 = "finding 9 (errors that explain)"

// TestUpgradeError: an owner holding a read that asks for the write
// (an upgrade, taken from its read Lease) gets its own error at once,
// wrapping ErrUpgrade and ErrNotAcquired; contention (another owner's
// TryLock while a write is held) is ErrNotAcquired and not ErrUpgrade, so
// code tells a bug from contention.
func TestUpgradeError(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, tg := range itest.FRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			c := itest.FClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f9:upgrade:" + tg.String()
			o, rd := itest.FFirst(t, tg, c, name, fairrw.Read)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := o.Further(ctx, rd, fairrw.Write)
			if err == nil {
				_ = l.Unlock(itest.TestCtx(t))
				t.Fatalf("%s: an upgrade (the write asked for from a read Lease) was granted", finding9)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: an upgrade waited (for itself) until its context ended: %v", finding9, err)
			}
			if !errors.Is(err, fairrw.ErrNotAcquired) || !errors.Is(err, hidden.ErrUpgrade) {
				t.Fatalf("%s: an upgrade returned %q (ErrNotAcquired: %v, ErrUpgrade: %v): want its own error, wrapping ErrUpgrade and ErrNotAcquired, that contention never returns",
					finding9, err, errors.Is(err, fairrw.ErrNotAcquired), errors.Is(err, hidden.ErrUpgrade))
			}
			itest.FUnlock(t, finding9, rd)

			_, w := itest.FFirst(t, tg, c, name, fairrw.Write)
			_, err = tg.Owner(c, name).Acquire(itest.TestCtx(t), fairrw.Write, false)
			if !errors.Is(err, fairrw.ErrNotAcquired) || errors.Is(err, hidden.ErrUpgrade) {
				t.Fatalf("%s: contention (another owner holds the write) returned %v, want ErrNotAcquired and not ErrUpgrade", finding9, err)
			}
			itest.FUnlock(t, finding9, w)
		})
	}
}

// fPrivateNames matches the policies' internal codes used as words.
var fPrivateNames = regexp.MustCompile(`\b(wp|pf)\b`)

// TestMismatchNamesPolicy: an acquire on a name held under another
// policy (or as the Mutex) returns ErrPolicyMismatch naming the holding
// policy by its public name ("redisson", "writer-preferring",
// "phase-fair", "redisson-mutex"), never by an internal code ("wp", "pf").
func TestMismatchNamesPolicy(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, holder := range itest.FAllTargets() {
		for _, asker := range itest.FAllTargets() {
			if holder.String() == asker.String() || (holder.Mutex && asker.Mutex) {
				continue
			}
			t.Run("held-by-"+holder.String()+"/asked-by-"+asker.String(), func(t *testing.T) {
				name := "f9:mismatch:" + holder.String() + ":" + asker.String()
				_, held := itest.FFirst(t, holder, itest.FClient(t, r, holder), name, fairrw.Write, fairrw.WithLease(10*time.Second))
				_, err := asker.Owner(itest.FClient(t, r, asker), name).Acquire(itest.TestCtx(t), fairrw.Write, false)
				if !errors.Is(err, fairrw.ErrPolicyMismatch) {
					t.Fatalf("%s: acquire as %s on a name held as %s: %v, want ErrPolicyMismatch", finding9, asker, holder, err)
				}
				msg := err.Error()
				public := holder.String()
				if holder.Mutex {
					public = "redisson-mutex"
				}
				if !strings.Contains(msg, public) || fPrivateNames.MatchString(msg) {
					t.Fatalf("%s: the mismatch error %q does not name the holding policy by its public name %q (or uses an internal code)", finding9, msg, public)
				}
				itest.FUnlock(t, finding9, held)
			})
		}
	}
}
