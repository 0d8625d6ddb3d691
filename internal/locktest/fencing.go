package locktest

import (
	"errors"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
)

// FencingTokens: every new write grant gets a token greater than all
// before it for the name, across owners and clients; a reentrant write keeps
// its owner's token; a read gets the current token.
func FencingTokens(t *testing.T, env Env) {
	c1, c2 := env.client(t), env.client(t)
	var last uint64
	for i := range 4 {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		m := c.RWMutex(name(t))
		w := lock(t, m, fairrw.Write)
		if w.Token() <= last {
			t.Fatalf("write grant %d: token %d, not above %d", i, w.Token(), last)
		}
		last = w.Token()
		again := lock(t, m, fairrw.Write)
		if again.Token() != last {
			t.Fatalf("reentrant write: token %d, want the owner's %d", again.Token(), last)
		}
		under := lock(t, m, fairrw.Read)
		if under.Token() != last {
			t.Fatalf("read under the write: token %d, want %d", under.Token(), last)
		}
		unlock(t, under)
		unlock(t, again)
		unlock(t, w)
		r := lock(t, c.RWMutex(name(t)), fairrw.Read)
		if r.Token() != last {
			t.Fatalf("read: token %d, want the current %d", r.Token(), last)
		}
		unlock(t, r)
	}
	EventuallyNoKeys(t, env, name(t))
}

// PolicyMismatch: a name held under one policy refuses every other policy
// (never two holders), and is free for any policy once released.
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
					}
				}
			}
			unlock(t, held)
			EventuallyNoKeys(t, env, name(t))
		}
	}
}
