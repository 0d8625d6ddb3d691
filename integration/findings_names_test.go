package integration

// Findings 5 (a lost wake-up on a downgrade), 6 (names that alias other
// locks' keys) and 9 (errors that explain) of that review.

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/redistest"
)

const finding5 = "finding 5 (lost wake-up on a downgrade)"

// TestFinding5DowngradeWakesReader: Redisson policy, client tracking on (the
// default on RESP3), Client lease 20s. Owner A holds the write and a
// downgrade read; a writer W waits, then a reader R (both on one Client).
// A unlocks the write and keeps its read: R may share the lock with A's
// read now and must be granted promptly, by a wake-up (not its timer, which
// is the lock's 20s PTTL); W keeps waiting until A's read goes.
func TestFinding5DowngradeWakesReader(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	tg := fTarget{policy: fairrw.Redisson()}
	const lease = 20 * time.Second
	name := "f5:downgrade-wake"
	holderC := fClient(t, r, tg, fairrw.WithLeaseTime(lease))
	waitersC := fClient(t, r, tg, fairrw.WithLeaseTime(lease))
	o, w := fFirst(t, tg, holderC, name, fairrw.Write)
	rd := fFurther(t, o, w, fairrw.Read)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	type res struct {
		l   *fairrw.Lease
		err error
	}
	wait := func(mode fairrw.Mode) <-chan res {
		ch := make(chan res, 1)
		go func() {
			l, err := tg.owner(waitersC, name).acquire(ctx, mode, true)
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

	fUnlock(t, finding5, w) // the downgrade: A keeps its read
	released := time.Now()
	select {
	case g := <-reader:
		l := fMust(t, "the waiting reader after the downgrade", g.l, g.err)
		if hidden.WokenBy(l) == "timer" {
			t.Fatalf("%s: the waiting reader was granted %v after the downgrade by its timer, not by a wake-up", finding5, time.Since(released).Round(time.Millisecond))
		}
		fUnlock(t, finding5, l)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the waiting reader is still asleep 5s after the downgrade let readers in (its timer is the lock's ~20s PTTL: the invalidation woke only the waiting writer, which did not pass the turn on); keys: %s",
			finding5, fDescribe(t, raw, name))
	}
	select {
	case g := <-writer:
		t.Fatalf("the waiting writer returned while A still reads: %v", g.err)
	default:
	}
	fUnlock(t, finding5, rd)
	select {
	case g := <-writer:
		fUnlock(t, finding5, fMust(t, "the waiting writer after the last read", g.l, g.err))
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

// TestFinding6NamesDoNotAlias: under the fair policies, distinct valid
// names are distinct locks: "x" and "{x}" exclude nothing of each other,
// and "{orders}:readers" shares no key with "orders" (both can be held at
// once, in every mode, and every Unlock returns nil); no call returns a raw
// Redis error.
func TestFinding6NamesDoNotAlias(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
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
			for _, firstMode := range tg.modes() {
				for _, thenMode := range tg.modes() {
					t.Run(tg.String()+"/"+tc.name+"/"+firstMode.String()+"-"+thenMode.String(), func(t *testing.T) {
						c := fClient(t, r, tg)
						base := "f6-" + tg.String() + "-" + tc.id + "-" + firstMode.String() + "-" + thenMode.String()
						first, then := tc.first(base), tc.then(base)
						_, a := fFirst(t, tg, c, first, firstMode, fairrw.WithLease(10*time.Second))
						b, err := tg.owner(c, then).acquire(testCtx(t), thenMode, false, fairrw.WithLease(10*time.Second))
						if err != nil {
							t.Fatalf("%s: %q held for %s, another owner's try of the %s of the distinct lock %q: %v (raw Redis error: %v); keys: %s",
								finding6, first, firstMode, thenMode, then, err, fRawRedisError(err), fDescribe(t, raw, base))
						}
						if err := a.Unlock(testCtx(t)); err != nil {
							t.Fatalf("%s: Unlock of %q (%s) while %q is held: %v (raw Redis error: %v)", finding6, first, firstMode, then, err, fRawRedisError(err))
						}
						if err := b.Unlock(testCtx(t)); err != nil {
							t.Fatalf("%s: Unlock of %q (%s): %v (raw Redis error: %v)", finding6, then, thenMode, err, fRawRedisError(err))
						}
						fFreeNow(t, finding6, tg, c, raw, first)
						fFreeNow(t, finding6, tg, c, raw, then)
					})
				}
			}
		}
	}
}

// TestFinding6ForeignKeyIsSentinel: a key of another type (a string) at a
// lock's name gives an error wrapping ErrPolicyMismatch, never a raw
// WRONGTYPE, under every policy and as the Mutex, and changes nothing.
func TestFinding6ForeignKeyIsSentinel(t *testing.T) {
	r := redistest.StartProcess(t)
	raw := fRaw(t, r)
	for _, tg := range fAllTargets() {
		for _, mode := range tg.modes() {
			for _, wait := range []bool{false, true} {
				t.Run(tg.String()+"/"+mode.String()+"/wait="+map[bool]string{false: "no", true: "yes"}[wait], func(t *testing.T) {
					c := fClient(t, r, tg)
					name := "f6:foreign:" + tg.String() + ":" + mode.String() + ":" + map[bool]string{false: "try", true: "lock"}[wait]
					if err := raw.Do(testCtx(t), raw.B().Set().Key(name).Value("not a lock").Build()).Error(); err != nil {
						t.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					l, err := tg.owner(c, name).acquire(ctx, mode, wait)
					if err == nil {
						_ = l.Unlock(testCtx(t))
						t.Fatalf("%s: acquire granted over a string key at the lock's name", finding6)
					}
					if !errors.Is(err, fairrw.ErrPolicyMismatch) || fRawRedisError(err) {
						t.Fatalf("%s: acquire over a string key at the lock's name: %v (raw Redis error: %v); want an error wrapping ErrPolicyMismatch, never a raw WRONGTYPE",
							finding6, err, fRawRedisError(err))
					}
					if v, err := raw.Do(testCtx(t), raw.B().Get().Key(name).Build()).ToString(); err != nil || v != "not a lock" {
						t.Fatalf("the string at the lock's name changed: %q, %v", v, err)
					}
				})
			}
		}
	}
}

const finding9 = "finding 9 (errors that explain)"

// TestFinding9UpgradeError: an owner holding a read that asks for the write
// (an upgrade, taken from its read Lease) gets its own error at once,
// wrapping ErrUpgrade and ErrNotAcquired; contention (another owner's
// TryLock while a write is held) is ErrNotAcquired and not ErrUpgrade, so
// code tells a bug from contention.
func TestFinding9UpgradeError(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, tg := range fRWTargets() {
		t.Run(tg.String(), func(t *testing.T) {
			c := fClient(t, r, tg, fairrw.WithLeaseTime(3*time.Second))
			name := "f9:upgrade:" + tg.String()
			o, rd := fFirst(t, tg, c, name, fairrw.Read)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := o.further(ctx, rd, fairrw.Write)
			if err == nil {
				_ = l.Unlock(testCtx(t))
				t.Fatalf("%s: an upgrade (the write asked for from a read Lease) was granted", finding9)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: an upgrade waited (for itself) until its context ended: %v", finding9, err)
			}
			if !errors.Is(err, fairrw.ErrNotAcquired) || !errors.Is(err, hidden.ErrUpgrade) {
				t.Fatalf("%s: an upgrade returned %q (ErrNotAcquired: %v, ErrUpgrade: %v): want its own error, wrapping ErrUpgrade and ErrNotAcquired, that contention never returns",
					finding9, err, errors.Is(err, fairrw.ErrNotAcquired), errors.Is(err, hidden.ErrUpgrade))
			}
			fUnlock(t, finding9, rd)

			_, w := fFirst(t, tg, c, name, fairrw.Write)
			_, err = tg.owner(c, name).acquire(testCtx(t), fairrw.Write, false)
			if !errors.Is(err, fairrw.ErrNotAcquired) || errors.Is(err, hidden.ErrUpgrade) {
				t.Fatalf("%s: contention (another owner holds the write) returned %v, want ErrNotAcquired and not ErrUpgrade", finding9, err)
			}
			fUnlock(t, finding9, w)
		})
	}
}

// fPrivateNames matches the policies' internal codes used as words.
var fPrivateNames = regexp.MustCompile(`\b(wp|pf)\b`)

// TestFinding9MismatchNamesPolicy: an acquire on a name held under another
// policy (or as the Mutex) returns ErrPolicyMismatch naming the holding
// policy by its public name ("redisson", "writer-preferring",
// "phase-fair", "redisson-mutex"), never by an internal code ("wp", "pf").
func TestFinding9MismatchNamesPolicy(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, holder := range fAllTargets() {
		for _, asker := range fAllTargets() {
			if holder.String() == asker.String() || (holder.mutex && asker.mutex) {
				continue
			}
			t.Run("held-by-"+holder.String()+"/asked-by-"+asker.String(), func(t *testing.T) {
				name := "f9:mismatch:" + holder.String() + ":" + asker.String()
				_, held := fFirst(t, holder, fClient(t, r, holder), name, fairrw.Write, fairrw.WithLease(10*time.Second))
				_, err := asker.owner(fClient(t, r, asker), name).acquire(testCtx(t), fairrw.Write, false)
				if !errors.Is(err, fairrw.ErrPolicyMismatch) {
					t.Fatalf("%s: acquire as %s on a name held as %s: %v, want ErrPolicyMismatch", finding9, asker, holder, err)
				}
				msg := err.Error()
				public := holder.String()
				if holder.mutex {
					public = "redisson-mutex"
				}
				if !strings.Contains(msg, public) || fPrivateNames.MatchString(msg) {
					t.Fatalf("%s: the mismatch error %q does not name the holding policy by its public name %q (or uses an internal code)", finding9, msg, public)
				}
				fUnlock(t, finding9, held)
			})
		}
	}
}
