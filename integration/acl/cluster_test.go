package acl

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestClusterACL: docs/acl.md's lines for a cluster (each policy's tenant
// lines and the cluster block), set on every node of a 3-primary cluster.
// Under every policy and the Mutex, the tenant billing locks, a waiter of
// another of its Clients is woken by the release (a sharded channel on
// Redis 7), and it inspects; the tenant shipping is refused billing's lock
// with ErrPermission.
func TestClusterACL(t *testing.T) {
	// A cluster of its own even when FAIRRW_REDIS_CLUSTER names one: the
	// test sets ACL users on every node.
	c := redistest.StartClusterProcesses(t, 3, 0)
	nodes := c.Primaries(t)
	for _, tg := range aclTargets {
		t.Run(tg.role, func(t *testing.T) {
			pw := map[string]string{"billing": itest.AclPassword(), "shipping": itest.AclPassword()}
			for _, ns := range []string{"billing", "shipping"} {
				user := ns + "-" + tg.role
				for _, addr := range nodes {
					send := func(args ...string) error { return c.Do(t, addr, args...).Error() }
					setTenantBy(t, send, ns, user, pw[ns], tg.role, "cluster")
				}
			}
			newClient := func(ns string, withNS bool) *fairrw.Client {
				opt := c.ClientOption()
				opt.Username, opt.Password = ns+"-"+tg.role, pw[ns]
				return aclTopologyClient(t, opt, tg, ns, withNS)
			}
			checkTenantLocks(t, tg, newClient, pw["billing"], pw["shipping"])
		})
	}
}

// aclTopologyClient is a Client of the ACL user in opt under tg's policy,
// confined to namespace ns when withNS, closed at cleanup.
func aclTopologyClient(t *testing.T, opt rueidis.ClientOption, tg aclTarget, ns string, withNS bool) *fairrw.Client {
	t.Helper()
	opts := []fairrw.Option{fairrw.WithClientOption(opt), fairrw.WithPolicy(tg.policy)}
	if withNS {
		opts = append(opts, fairrw.WithNamespace(ns))
	}
	cl, err := fairrw.New(opts...)
	if err != nil {
		t.Fatalf("New as %s: %v", opt.Username, err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// checkTenantLocks: the tenant billing locks a name of its namespace, a
// waiter of another of its Clients is woken by the release's message (not
// a timer), and it inspects; the tenant shipping is refused the lock,
// by WithNamespace and, without it, by the ACL (ErrPermission, no password
// in the error).
func checkTenantLocks(t *testing.T, tg aclTarget, client func(ns string, withNS bool) *fairrw.Client, passwords ...string) {
	t.Helper()
	a, b := client("billing", true), client("billing", true)
	ctx := itest.TestCtx(t)
	const name = "billing:{cl}:x"
	lock := func(cl *fairrw.Client, ctx context.Context) (*fairrw.Lease, error) {
		if tg.mutex {
			return cl.Mutex(name).Lock(ctx)
		}
		return cl.RWMutex(name).Lock(ctx)
	}
	l, err := lock(a, ctx)
	if err != nil {
		t.Fatalf("billing's Lock: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		w, err := lock(b, wctx)
		if err == nil {
			// Woken by the release's message (or tracking), not
			// by a timer: the channel works under the ACL.
			if by := hidden.WokenBy(w); by == "timer" || by == "" {
				err = errors.New("woken by " + by + ", want the release's message")
			}
			if uerr := w.Unlock(context.Background()); err == nil {
				err = uerr
			}
		}
		got <- err
	}()
	if info, err := b.Inspect(ctx, name); err != nil || len(info.Holders) != 1 {
		t.Fatalf("billing's Inspect: %+v, %v", info, err)
	}
	// Another tenant, with its own documented lines, cannot take it.
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var oerr error
	if tg.mutex {
		_, oerr = client("shipping", true).Mutex(name).TryLock(octx)
	} else {
		_, oerr = client("shipping", true).RWMutex(name).TryLock(octx)
	}
	if !errors.Is(oerr, fairrw.ErrInvalidName) {
		t.Fatalf("shipping's TryLock of %s under WithNamespace(shipping): %v, want ErrInvalidName", name, oerr)
	}
	raw := client("shipping", false)
	if tg.mutex {
		_, oerr = raw.Mutex(name).TryLock(octx)
	} else {
		_, oerr = raw.RWMutex(name).TryLock(octx)
	}
	refused(t, "shipping's TryLock of billing's lock", name, oerr, passwords...)
	time.Sleep(50 * time.Millisecond) // the waiter has queued or subscribed
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("billing's waiter on another Client: %v", err)
	}
}
