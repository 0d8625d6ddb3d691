package policy

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
)

// fastRelease is one release request as fairrw sends it, kept so that the
// very same request (its id and stamp) can be sent again: a retry, or a
// copy delayed in the network.
type fastRelease struct {
	f       *fairRaw
	owner   string
	mode    string
	request string
	stamp   string
	writes  int
	reads   int
	mayRead bool
	abandon bool
}

func (f *fairRaw) release(owner, mode string) *fastRelease {
	return &fastRelease{f: f, owner: owner, mode: mode, request: "req-" + owner + "-" + strconv.FormatInt(time.Now().UnixNano(), 10),
		stamp: strconv.FormatInt(time.Now().UnixMilli(), 10), mayRead: mode == "r"}
}

// send runs the request and returns its result, grantee and token.
func (r *fastRelease) send() (int64, string, int64) {
	f := r.f
	f.t.Helper()
	ab, mr := "0", "0"
	if r.abandon {
		ab = "1"
	}
	if r.mayRead {
		mr = "1"
	}
	a := itest.Args([]string{f.policy, r.mode, r.owner, "1000", "1000", r.stamp, "10000", "publish", "5000", ab, "5000",
		strconv.Itoa(r.writes), "1000", strconv.Itoa(r.reads), "1000", mr, "0"})
	keys := append(f.keys(r.owner), compat.UnlockLatch(f.name, r.request))
	res, err := f.raw.Do(context.Background(), f.raw.B().Eval().Script(lua.FairUnlock()).
		Numkeys(10).Key(keys...).Arg(a...).Build()).ToArray()
	if err != nil || len(res) != 3 {
		f.t.Fatalf("unlock %s %s: %v %v", r.owner, r.mode, res, err)
	}
	n, _ := res[0].AsInt64()
	g, _ := res[1].ToString()
	tok, _ := res[2].AsInt64()
	return n, g, tok
}

// dropLatch deletes the request's unlock latch, as the janitor does once
// an answer came back on the first try (or as its lifetime ends).
func (r *fastRelease) dropLatch() {
	r.f.raw.Do(context.Background(), r.f.raw.B().Del().Key(compat.UnlockLatch(r.f.name, r.request)).Build())
}

// holds says whether owner holds mode in Redis now, by the scripts' rules
// (an entry counts while now <= its deadline).
func (f *fairRaw) holds(owner, mode string) bool {
	f.t.Helper()
	now := f.serverMillis()
	if mode == "w" {
		h := f.hash()
		d, _ := strconv.ParseInt(h["wdeadline"], 10, 64)
		return h["writer"] == owner && d >= now
	}
	s, err := f.raw.Do(context.Background(), f.raw.B().Zscore().Key(f.fk.Readers).Member(owner).Build()).AsFloat64()
	return err == nil && int64(s) >= now
}

func (f *fairRaw) serverMillis() int64 {
	f.t.Helper()
	v, err := f.raw.Do(context.Background(), f.raw.B().Time().Build()).AsStrSlice()
	if err != nil || len(v) != 2 {
		f.t.Fatalf("TIME: %v %v", v, err)
	}
	s, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return s*1000 + us/1000
}

// idle says whether none of the lock's keys but the fence is left.
func (f *fairRaw) idle() bool {
	n, err := f.raw.Do(context.Background(), f.raw.B().Exists().Key(f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted).Build()).AsInt64()
	if err != nil {
		f.t.Fatal(err)
	}
	return n == 0
}

// fastGrant asks for a first hold of mode and fails unless it was granted
// by the fast path (S written without "busy").
func (f *fairRaw) fastGrant(owner, mode string, lease time.Duration) int64 {
	f.t.Helper()
	if !f.idle() {
		f.t.Fatalf("fastGrant %s %s: the lock is not idle: %v", owner, mode, f.hash())
	}
	v := f.acquire(owner, mode, lease, time.Second, "1", 0, "0")
	if v[0] != 1 {
		f.t.Fatalf("%s %s on an idle lock: %v", owner, mode, v)
	}
	if h := f.hash(); h["busy"] != "" {
		f.t.Fatalf("%s %s on an idle lock was not the fast path's: %v", owner, mode, h)
	}
	f.check("fast grant " + owner + " " + mode)
	return v[1]
}

// TestFastPathReleaseCopyAfterNewOwner: owner A's fast hold is released
// by request X (the fast release); B then takes the lock, by the fast path
// too; copies of X arrive later, while X's latch is kept and after it is
// gone. Neither may free B's hold, and each must answer X's first answer
// or change nothing.
func TestFastPathReleaseCopyAfterNewOwner(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		for _, mode := range []string{"w", "r"} {
			t.Run(p+"/"+mode, func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:copy:"+p+":"+mode)
				f.fastGrant("a:1", mode, 5*time.Second)
				x := f.release("a:1", mode)
				if n, _, _ := x.send(); n != 1 {
					t.Fatalf("fast release of a:1: %d, want 1", n)
				}
				if !f.idle() {
					t.Fatalf("keys left after the only hold's release: %v", f.hash())
				}
				f.fastGrant("b:1", mode, 5*time.Second)
				if n, _, _ := x.send(); n != 1 {
					t.Fatalf("a copy of the release while its latch lives: %d, want its first answer 1", n)
				}
				if !f.holds("b:1", mode) {
					t.Fatalf("a copy of a:1's release freed b:1: %v", f.hash())
				}
				x.dropLatch()
				x.send()
				if !f.holds("b:1", mode) {
					t.Fatalf("a copy of a:1's release (latch gone) freed b:1: %v", f.hash())
				}
				f.check("copies of a:1's release")
				if n, _, _ := f.release("b:1", mode).send(); n != 1 {
					t.Fatalf("b:1's release: %d, want 1", n)
				}
				if !f.idle() {
					t.Fatalf("keys left: %v", f.hash())
				}
			})
		}
	}
}

// TestFastPathReleaseAfterExpiry: a fast hold runs out in Redis (no
// renewal), and its owner's release arrives after. It must answer "not
// held" (-1): the hold had ended, so Unlock owes ErrNotHeld. Then the same
// with another owner's fast hold taken meanwhile, which must survive.
func TestFastPathReleaseAfterExpiry(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		for _, mode := range []string{"w", "r"} {
			t.Run(p+"/"+mode, func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:expired:"+p+":"+mode)
				f.fastGrant("a:1", mode, 30*time.Millisecond)
				x := f.release("a:1", mode)
				time.Sleep(80 * time.Millisecond)
				if n, _, _ := x.send(); n != -1 {
					t.Fatalf("release of a hold that ran out in Redis: %d, want -1", n)
				}
				f.check("late release")
				// S of a fast read outlives its entry by half a lease.
				time.Sleep(50 * time.Millisecond)
				f.fastGrant("b:1", mode, 5*time.Second)
				y := f.release("a:1", mode)
				if n, _, _ := y.send(); n != -1 {
					t.Fatalf("a:1's release under b:1's hold: %d, want -1", n)
				}
				if !f.holds("b:1", mode) {
					t.Fatalf("a:1's release freed b:1: %v", f.hash())
				}
				f.release("b:1", mode).send()
			})
		}
	}
}

// TestFastPathThenWaiters: a fast hold, then a call of each kind arrives
// through the full path, then the holder releases: what the full path
// would do must happen (the waiter granted or told, the refused TryLock
// changing nothing, PhaseFair admitting the waiting readers), and nothing
// is left once everyone released.
func TestFastPathThenWaiters(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			t.Run("trylock-changes-nothing", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:try:"+p)
				f.fastGrant("a:1", "w", 5*time.Second)
				before := f.hash()
				beforeTTL := f.expiry(f.fk.State)
				for _, m := range []string{"w", "r"} {
					if v := f.acquire("b:"+m, m, time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
						t.Fatalf("TryLock %s beside a fast write: %v", m, v)
					}
				}
				if after := f.hash(); len(after) != len(before) || after["busy"] != "" {
					t.Fatalf("refused TryLocks changed the state: %v -> %v", before, after)
				}
				if ttl := f.expiry(f.fk.State); ttl != beforeTTL {
					t.Fatalf("refused TryLocks moved S's expiry %d -> %d", beforeTTL, ttl)
				}
				if n, _, _ := f.release("a:1", "w").send(); n != 1 || !f.idle() {
					t.Fatalf("release: %d, idle %v %v", n, f.idle(), f.hash())
				}
			})
			t.Run("queued-writer-granted", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:queued:"+p)
				tok := f.fastGrant("a:1", "w", 5*time.Second)
				if v := f.acquire("b:1", "w", time.Second, time.Second, "1", 0, "0"); v[0] != 0 {
					t.Fatalf("Lock beside a fast write: %v", v)
				}
				f.check("b queued")
				n, g, tok2 := f.release("a:1", "w").send()
				if n != 1 || g != "b:1" || tok2 <= tok {
					t.Fatalf("release: %d grantee %q token %d (a's %d), want 1 b:1 and a greater token", n, g, tok2, tok)
				}
				f.check("release to b")
				if !f.holds("b:1", "w") {
					t.Fatalf("b:1 does not hold: %v", f.hash())
				}
				if n, _, _ := f.release("b:1", "w").send(); n != 1 || !f.idle() {
					t.Fatalf("b's release: %d, idle %v %v", n, f.idle(), f.hash())
				}
			})
			t.Run("reader-waits-writer-releases", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:reader:"+p)
				f.fastGrant("a:1", "w", 5*time.Second)
				if v := f.acquire("r:1", "r", time.Second, time.Second, "1", 0, "0"); v[0] != 0 {
					t.Fatalf("RLock beside a fast write: %v", v)
				}
				ch := itest.Listen(t, e.Raw, f.fk.Channel)
				if n, _, _ := f.release("a:1", "w").send(); n != 1 {
					t.Fatalf("release: %d", n)
				}
				ch.Want("r")
				f.check("release with a reader waiting")
				if p == "phase-fair" {
					// The reader was admitted: a writer's attempt is refused
					// until it entered.
					if v := f.acquire("c:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
						t.Fatalf("a writer before the reader admitted at the write's end: %v", v)
					}
				}
				if v := f.acquire("r:1", "r", time.Second, time.Second, "1", 0, "0"); v[0] != 1 {
					t.Fatalf("the waiting reader after the write ended: %v", v)
				}
				f.release("r:1", "r").send()
				if !f.idle() {
					t.Fatalf("keys left: %v", f.hash())
				}
			})
			t.Run("quorum-round-told", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:round:"+p)
				f.fastGrant("a:1", "r", 5*time.Second)
				if v := f.acquire("q:1", "w", time.Second, time.Second, "0", 0, "1"); v[0] != 0 {
					t.Fatalf("a quorum round's write beside a fast read: %v", v)
				}
				ch := itest.Listen(t, e.Raw, f.fk.Channel)
				if n, _, _ := f.release("a:1", "r").send(); n != 1 {
					t.Fatalf("release: %d", n)
				}
				ch.Want("r")
				if !f.idle() {
					t.Fatalf("keys left: %v", f.hash())
				}
			})
			t.Run("second-reader-both-orders", func(t *testing.T) {
				for _, first := range []string{"a:1", "b:1"} {
					f := newFairRaw(t, e.Raw, p, "fast:readers:"+p+first)
					f.fastGrant("a:1", "r", 5*time.Second)
					if v := f.acquire("b:1", "r", 5*time.Second, time.Second, "0", 0, "0"); v[0] != 1 {
						t.Fatalf("TryRLock beside a fast read: %v", v)
					}
					f.check("second reader")
					second := map[string]string{"a:1": "b:1", "b:1": "a:1"}[first]
					if n, _, _ := f.release(first, "r").send(); n != 1 {
						t.Fatalf("release %s: %d", first, n)
					}
					if !f.holds(second, "r") {
						t.Fatalf("%s's release freed %s", first, second)
					}
					if v := f.acquire("w:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
						t.Fatalf("a writer beside %s's read: %v", second, v)
					}
					if n, _, _ := f.release(second, "r").send(); n != 1 || !f.idle() {
						t.Fatalf("release %s: %d, idle %v %v", second, n, f.idle(), f.hash())
					}
				}
			})
			t.Run("renewed-then-released", func(t *testing.T) {
				for _, mode := range []string{"w", "r"} {
					f := newFairRaw(t, e.Raw, p, "fast:renew:"+p+mode)
					f.fastGrant("a:1", mode, 150*time.Millisecond)
					for range 4 {
						time.Sleep(50 * time.Millisecond)
						if f.renew("a:1", mode, 150*time.Millisecond) != 1 {
							t.Fatalf("renewal of a live fast %s", mode)
						}
						f.check("renewal")
					}
					// The state hash must not have expired under the renewed hold's
					// writer; a reader's renewal keeps its own entry.
					if !f.holds("a:1", mode) {
						t.Fatalf("renewed fast %s lost: %v", mode, f.hash())
					}
					if v := f.acquire("b:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
						t.Fatalf("a writer beside a renewed fast %s: %v", mode, v)
					}
					if n, _, _ := f.release("a:1", mode).send(); n != 1 || !f.idle() {
						t.Fatalf("release after renewals: %d, idle %v %v", n, f.idle(), f.hash())
					}
				}
			})
			t.Run("renewed-then-expired-then-released", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:renew-expire:"+p)
				f.fastGrant("a:1", "w", 60*time.Millisecond)
				time.Sleep(20 * time.Millisecond)
				f.renew("a:1", "w", 60*time.Millisecond)
				x := f.release("a:1", "w")
				time.Sleep(100 * time.Millisecond) // past the deadline; the state lives on for half a lease
				if n, _, _ := x.send(); n != -1 {
					t.Fatalf("release of a renewed fast write that ran out: %d, want -1 (%v)", n, f.hash())
				}
			})
			t.Run("further-holds", func(t *testing.T) {
				f := newFairRaw(t, e.Raw, p, "fast:further:"+p)
				tok := f.fastGrant("a:1", "w", 5*time.Second)
				if v := f.acquire("a:1", "w", 5*time.Second, time.Second, "1", 2, "0"); v[0] != 1 || v[1] != tok {
					t.Fatalf("further write on a fast write: %v (token %d)", v, tok)
				}
				if v := f.acquire("a:1", "r", 5*time.Second, time.Second, "1", 1, "0"); v[0] != 1 {
					t.Fatalf("downgrade's read on a fast write: %v", v)
				}
				f.check("further holds")
				r := f.release("a:1", "w")
				r.writes, r.reads, r.mayRead = 1, 1, true
				if n, _, _ := r.send(); n != 0 {
					t.Fatalf("release of one of two writes: %d, want 0", n)
				}
				r = f.release("a:1", "w")
				r.reads, r.mayRead = 1, true
				if n, _, _ := r.send(); n != 1 {
					t.Fatalf("release of the last write: %d, want 1", n)
				}
				if v := f.acquire("b:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
					t.Fatalf("a writer beside the downgraded read: %v", v)
				}
				if n, _, _ := f.release("a:1", "r").send(); n != 1 || !f.idle() {
					t.Fatalf("release of the read: %d, idle %v %v", n, f.idle(), f.hash())
				}
			})
			t.Run("force-unlock", func(t *testing.T) {
				for _, mode := range []string{"w", "r"} {
					f := newFairRaw(t, e.Raw, p, "fast:force:"+p+mode)
					f.fastGrant("a:1", mode, 5*time.Second)
					if f.forceUnlock(mode) != 1 || !f.idle() {
						t.Fatalf("force unlock of a fast %s: idle %v %v", mode, f.idle(), f.hash())
					}
					f.fastGrant("b:1", mode, 5*time.Second)
					if n, _, _ := f.release("a:1", mode).send(); n != -1 {
						t.Fatalf("the forced owner's release: %d, want -1", n)
					}
					if !f.holds("b:1", mode) {
						t.Fatalf("the forced owner's release freed b:1")
					}
					f.release("b:1", mode).send()
				}
			})
		})
	}
}

// TestFastPathTokensIncrease: write grants alternating between the fast
// path (idle lock) and the full one (a grant on a queued writer's behalf,
// a grant after a read), in a tight loop: every write token is greater
// than the one before.
func TestFastPathTokensIncrease(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			f := newFairRaw(t, e.Raw, p, "fast:tokens:"+p)
			var last int64
			next := func(tok int64, how string) {
				if tok <= last {
					t.Fatalf("%s: token %d after %d", how, tok, last)
				}
				last = tok
			}
			for i := range 200 {
				a, b := "a:"+strconv.Itoa(i), "b:"+strconv.Itoa(i)
				next(f.fastGrant(a, "w", 5*time.Second), "fast grant")
				switch i % 3 {
				case 0:
					f.release(a, "w").send()
				case 1:
					f.acquire(b, "w", 5*time.Second, time.Second, "1", 0, "0")
					_, g, tok := f.release(a, "w").send()
					if g != b {
						t.Fatalf("grantee %q, want %s", g, b)
					}
					next(tok, "grant on behalf")
					f.release(b, "w").send()
				case 2:
					f.release(a, "w").send()
					f.fastGrant(b, "r", 5*time.Second)
					f.acquire(a+"x", "w", 5*time.Second, time.Second, "1", 0, "0")
					_, g, tok := f.release(b, "r").send()
					if g != a+"x" {
						t.Fatalf("grantee %q after the read", g)
					}
					next(tok, "grant after a read")
					f.release(a+"x", "w").send()
				}
				if !f.idle() {
					t.Fatalf("round %d: keys left %v", i, f.hash())
				}
			}
		})
	}
}

// TestFastPathLateReleaseCopyAfterNewOwner: a Client's only hold (a fast
// path grant) is unlocked; the first copy of the release is held back in
// the network and the client's retry is answered (nil). Another Client
// then takes the lock, by the fast path. The held copy reaches Redis: it
// must not free the new owner, whose Unlock then answers nil.
func TestFastPathLateReleaseCopyAfterNewOwner(t *testing.T) {
	for _, lc := range itest.LateCases() {
		if lc.Name != "writer-preferring" && lc.Name != "phase-fair" {
			continue
		}
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(lc.Name+"/"+mode.String(), func(t *testing.T) {
				p, c, other := lc.Setup(t)
				ctx := itest.TestCtx(t)
				name := "fast-late-release-" + mode.String()
				l := itest.MustLock(t, c.RWMutex(name), mode, fairrw.WithLease(8*time.Second))
				// The owner's last release of a fast grant is the fast
				// release script of its own.
				sum := sha1.Sum([]byte(lua.Source("fair_unlock_fast")))
				fastUnlock := hex.EncodeToString(sum[:])
				p.Arm(func(b []byte) bool { return itest.ContainsAll(b, fastUnlock, name) })
				if err := l.Unlock(ctx); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				p.WaitHeld(t, time.Second)
				o := itest.MustLock(t, other.RWMutex(name), mode, fairrw.WithLease(8*time.Second))
				p.Deliver(t)
				time.Sleep(100 * time.Millisecond)
				if _, err := c.RWMutex(name).TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatalf("a write beside the new owner's %s after the late copy: %v, want ErrNotAcquired", mode, err)
				}
				if err := o.Unlock(ctx); err != nil {
					t.Fatalf("the new owner's Unlock after the late copy: %v", err)
				}
			})
		}
	}
}
