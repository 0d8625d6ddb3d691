package locktest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// FencingTokens: every new write grant gets a token greater than all
// before it for the name, across owners, handles and clients (never a given
// value: tokens come from the server's clock); a further write hold keeps its
// owner's token, and so does a read under the write; a read gets the current
// token. Once every hold has ended and its lease has passed, nothing of the
// name is left in Redis, not even the last token, and the next write's token
// is still greater (across an idle period).
func FencingTokens(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	n := name(t)
	var last uint64
	for i := range 4 {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		m := c.RWMutex(n)
		wrote := time.Now() // the grant, and its token, come after: a loaded machine returns Lock late
		w := lock(t, m, fairrw.Write)
		if w.Token() <= last {
			t.Fatalf("write grant %d: token %d, not above %d", i, w.Token(), last)
		}
		last = w.Token()
		again := hold(t, w, fairrw.Write)
		if again.Token() != last {
			t.Fatalf("further write: token %d, want the owner's %d", again.Token(), last)
		}
		under := hold(t, again, fairrw.Read)
		if under.Token() != last {
			t.Fatalf("read under the write: token %d, want %d", under.Token(), last)
		}
		leases := []*fairrw.Lease{under, again, w}
		if i%2 == 1 {
			leases = []*fairrw.Lease{w, under, again}
		}
		for _, l := range leases {
			unlock(t, l)
		}
		r := lock(t, m, fairrw.Read)
		// A read gets the last token still known, or 0 (docs/usage.md):
		// Redis keeps the last token a second past its write (lua/common.lua),
		// which the holds above can outlast on a loaded machine. Counted
		// from before the Lock call, which the write's grant follows.
		if r.Token() != last && (r.Token() != 0 || time.Since(wrote) < fenceKept) {
			t.Fatalf("read: token %d, want the current %d (%v after the write)", r.Token(), last, time.Since(wrote))
		}
		unlock(t, r)
	}
	EventuallyNoKeys(t, env, n)

	// Idle periods: a write with a short lease runs out, and everything of
	// the name expires; the next write still gets a greater token.
	idle := n + ":idle"
	last = 0
	for i := range 2 {
		w := lock(t, c1.RWMutex(idle), fairrw.Write, fairrw.WithLease(200*time.Millisecond))
		if w.Token() <= last {
			t.Fatalf("write after idle period %d: token %d, not above %d", i, w.Token(), last)
		}
		last = w.Token()
		if err := waitDone(t, w, 5*time.Second); !errors.Is(err, fairrw.ErrLeaseLost) {
			t.Fatalf("short write lease: Err = %v, want ErrLeaseLost", err)
		}
		EventuallyNothing(t, env, idle, 5*time.Second)
	}
	r := lock(t, c2.RWMutex(idle), fairrw.Read)
	if r.Token() != 0 {
		t.Fatalf("read on an idle lock with no token left: token %d, want 0", r.Token())
	}
	unlock(t, r)
	w := lock(t, c2.RWMutex(idle), fairrw.Write)
	if w.Token() <= last {
		t.Fatalf("write after a read: token %d, not above %d", w.Token(), last)
	}
	unlock(t, w)
	EventuallyNoKeys(t, env, idle)
}

// PolicyMismatch: a name held under one policy refuses every other policy
// (never two holders) with an error naming the holder's policy by its public
// name, and is free for any policy once released.
func PolicyMismatch(t *testing.T, env Env) {
	policies := Policies()
	for _, holder := range policies {
		hc := env.New(t, fairrw.WithPolicy(holder))
		for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
			held := lock(t, hc.RWMutex(name(t)), mode)
			for _, other := range policies {
				if other.String() == holder.String() {
					continue
				}
				oc := env.New(t, fairrw.WithPolicy(other))
				for _, wait := range []bool{false, true} {
					for _, m := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
						l, err := Acquire(ctx(t), oc.RWMutex(name(t)), m, wait)
						if !errors.Is(err, fairrw.ErrPolicyMismatch) {
							if l != nil {
								_ = l.Unlock(ctx(t))
							}
							t.Fatalf("%s %s under %s while %s holds %s: %v, want ErrPolicyMismatch", m, name(t), other, holder, mode, err)
						}
						// It names the holder by its public name.
						if msg := err.Error(); !strings.Contains(msg, "policy "+holder.String()) {
							t.Fatalf("mismatch error %q does not name the holder's policy %q", msg, holder)
						}
					}
				}
			}
			unlock(t, held)
			EventuallyNoKeys(t, env, name(t))
		}
	}
}

// fenceKept is how long Redis keeps a name's last fencing token past the
// write that set it, at least (lua/common.lua: a second past the top of
// its range).
const fenceKept = time.Second
