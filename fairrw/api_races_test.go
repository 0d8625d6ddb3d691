package fairrw_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
	"github.com/fairrw/rwlock/internal/hidden"
)

// Races and edge cases of Shutdown, Lease.Context, Inspect and fairrwtest
// on miniredis (their real-Redis twins are in
// integration/behaviour/api_races_test.go and integration/shutdown).

// TestInspectEveryValidName: Inspect works on every name a lock
// accepts, under any policy and the Mutex ("whatever policy holds it"),
// and refuses exactly the names every one of them refuses: every name over
// a small alphabet of braces and colons, up to 5 bytes.
func TestInspectEveryValidName(t *testing.T) {
	c := fairrwtest.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alphabet := []byte("a{}:")
	var names []string
	var grow func(prefix []byte)
	grow = func(prefix []byte) {
		if len(prefix) > 0 {
			names = append(names, string(prefix))
		}
		if len(prefix) == 5 {
			return
		}
		for _, b := range alphabet {
			grow(append(prefix[:len(prefix):len(prefix)], b))
		}
	}
	grow(nil)
	clients := map[string]*fairrw.Client{}
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair(), fairrw.Redisson()} {
		clients[p.String()] = fairrwtest.NewClient(t, fairrw.WithPolicy(p))
	}
	for _, name := range names {
		_, inspectErr := c.Inspect(ctx, name)
		if inspectErr != nil && !errors.Is(inspectErr, fairrw.ErrInvalidName) {
			t.Fatalf("Inspect(%q): %v", name, inspectErr)
		}
		valid := map[string]bool{}
		for p, pc := range clients {
			valid[p] = !errors.Is(pc.RWMutex(name).ForceUnlock(ctx, fairrw.Write), fairrw.ErrInvalidName)
		}
		valid["mutex"] = !errors.Is(c.Mutex(name).ForceUnlock(ctx), fairrw.ErrInvalidName)
		for p, ok := range valid {
			if ok && inspectErr != nil {
				t.Fatalf("%q is a valid name under %s, and Inspect refuses it: %v", name, p, inspectErr)
			}
		}
		if inspectErr == nil && !valid["mutex"] && !valid["redisson"] && !valid["writer-preferring"] {
			t.Fatalf("Inspect accepts %q, which no lock accepts", name)
		}
	}
}

// TestShutdownDuringQuorumUnlock: one node Client of a Quorum
// of three shuts down while the quorum lease is being unlocked: both
// finish, the Unlock succeeds (two nodes of three release it), the quorum
// lease ends once with ErrUnlocked as its Context's cause, and another
// quorum gets the lock at once.
func TestShutdownDuringQuorumUnlock(t *testing.T) {
	for round := range 5 {
		var clients, others []*fairrw.Client
		for range 3 {
			srv := fairrwtest.NewServer(t)
			clients = append(clients, srv.NewClient(t))
			others = append(others, srv.NewClient(t))
		}
		q, err := fairrw.NewQuorum(clients)
		if err != nil {
			t.Fatal(err)
		}
		// The next quorum's Clients make their first call in its TryLock:
		// a dial and a script load per node, which the default node
		// timeout (a hundredth of the lease: 300ms) does not cover on a
		// loaded machine (granted on 0 of 3 nodes, with a second copy of
		// the suite beside this one). What is checked is that the lock is
		// free on a majority, not how fast a node answers.
		next, err := fairrw.NewQuorum(others, fairrw.WithNodeTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		l, err := q.RWMutex("adv-quorum").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lctx := l.Context()
		var wg sync.WaitGroup
		var unlockErr, shutErr error
		wg.Add(2)
		go func() { defer wg.Done(); unlockErr = l.Unlock(ctx) }()
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(round) * 200 * time.Microsecond)
			shutErr = clients[0].Shutdown(ctx)
		}()
		wg.Wait()
		if shutErr != nil {
			t.Fatalf("round %d: Shutdown: %v", round, shutErr)
		}
		if unlockErr != nil {
			t.Fatalf("round %d: quorum Unlock racing a node's Shutdown: %v (two nodes of three are enough)", round, unlockErr)
		}
		if lctx.Err() == nil || !isDoneChan(l.Done()) || context.Cause(lctx) != hidden.ErrUnlocked {
			t.Fatalf("round %d: quorum lease after Unlock: cause %v", round, context.Cause(lctx))
		}
		got, err := next.RWMutex("adv-quorum").TryLock(ctx)
		if err != nil {
			t.Fatalf("round %d: another quorum after the Unlock: %v", round, err)
		}
		if err := got.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		q.Close()
		next.Close()
	}
}

// TestLeaseContextJoin: the Lease.Context doc's recipe to stop
// work when either the request or the lease ends works both ways, and
// leaves no goroutine behind.
func TestLeaseContextJoin(t *testing.T) {
	c := fairrwtest.NewClient(t)
	for _, requestFirst := range []bool{true, false} {
		l, err := c.RWMutex("adv-join").Lock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		reqCtx, reqCancel := context.WithCancel(context.Background())
		work := func() error {
			ctx, cancel := context.WithCancelCause(reqCtx)
			defer cancel(nil)
			defer context.AfterFunc(l.Context(), func() { cancel(context.Cause(l.Context())) })()
			if requestFirst {
				reqCancel()
			} else if err := l.Unlock(context.Background()); err != nil {
				return err
			}
			<-ctx.Done()
			return context.Cause(ctx)
		}
		cause := work()
		reqCancel()
		if requestFirst && !errors.Is(cause, context.Canceled) {
			t.Fatalf("request ended first: cause %v", cause)
		}
		if !requestFirst && cause != hidden.ErrUnlocked {
			t.Fatalf("lease ended first: cause %v, want ErrUnlocked", cause)
		}
		if l.Err() == nil && requestFirst {
			if l.Context().Err() != nil {
				t.Fatal("the request's end cancelled the lease's Context")
			}
			if err := l.Unlock(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFairrwtestServers: two Servers in one test are two Redis:
// a lock held on one is free on the other; a Client closed by the test
// before its cleanup closes again without harm; a Client made in a
// subtest is closed when the subtest ends (its calls then fail with
// ErrClosed), while the parent's Server lives on; parallel subtests share
// one Server.
func TestFairrwtestServers(t *testing.T) {
	a, b := fairrwtest.NewServer(t), fairrwtest.NewServer(t)
	ca, cb := a.NewClient(t), b.NewClient(t)
	l, err := ca.RWMutex("shared-name").Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cb.RWMutex("shared-name").TryLock(t.Context()); err != nil {
		t.Fatalf("the same name on another Server: %v", err)
	} else if err := got.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ca.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), fairrw.ErrClosed) {
		t.Fatalf("lease of a closed Client: %v", l.Err())
	}
	var sub *fairrw.Client
	t.Run("sub", func(t *testing.T) {
		sub = a.NewClient(t)
		if _, err := sub.RWMutex("sub").Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := sub.RWMutex("sub").TryLock(t.Context()); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("a subtest's Client after the subtest: %v, want ErrClosed", err)
	}
	t.Run("parallel", func(t *testing.T) {
		for i := range 4 {
			t.Run("p", func(t *testing.T) {
				t.Parallel()
				c := b.NewClient(t)
				for range 20 {
					l, err := c.RWMutex("parallel").Lock(t.Context())
					if err != nil {
						t.Fatalf("parallel subtest %d: %v", i, err)
					}
					if err := l.Unlock(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	})
	for _, k := range b.Miniredis().Keys() {
		if !strings.HasSuffix(k, ":fence") { // the last fencing token stays a second
			t.Fatalf("key left on the Server: %v", k)
		}
	}
}

func isDoneChan(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
