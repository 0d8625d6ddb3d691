package acl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// aclTarget is a policy and the docs/acl.md block its tenants use.
type aclTarget struct {
	role   string
	policy fairrw.Policy
	mutex  bool   // the Mutex (whatever the Client's policy)
	chName string // the channel of lock "billing:x"
}

var aclTargets = []aclTarget{
	{"writer-preferring", fairrw.WriterPreferring(), false, "fairrw:9:{billing:x}:wake"},
	{"phase-fair", fairrw.PhaseFair(), false, "fairrw:9:{billing:x}:wake"},
	{"redisson", fairrw.Redisson(), false, "redisson_rwlock:{billing:x}"},
	{"mutex", fairrw.WriterPreferring(), true, "redisson_lock__channel:{billing:x}"},
}

// aclKey is what Redis keeps at a key: its serialized value and PTTL.
type aclKey struct {
	dump string
	pttl int64
	at   time.Time // when pttl was read
}

// aclSnapshot returns every key matching pattern, as the admin sees it.
func aclSnapshot(t *testing.T, admin rueidis.Client, pattern string) map[string]aclKey {
	t.Helper()
	ctx := context.Background()
	keys, err := admin.Do(ctx, admin.B().Keys().Pattern(pattern).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]aclKey{}
	for _, k := range keys {
		d, err := admin.Do(ctx, admin.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		p, _ := admin.Do(ctx, admin.B().Pttl().Key(k).Build()).AsInt64()
		out[k] = aclKey{d, p, time.Now()}
	}
	return out
}

// sameKeys fails unless after holds exactly before's keys with the same
// values, none with a longer time to live (no one renewed) or gone.
func sameKeys(t *testing.T, what string, before, after map[string]aclKey) {
	t.Helper()
	if len(before) == 0 {
		t.Fatalf("%s: no keys to compare", what)
	}
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok && b.pttl > 0 && time.Since(b.at) >= time.Duration(b.pttl)*time.Millisecond:
			// Its time to live ran out (a last fencing token, kept a
			// second: a loaded machine's refused calls took longer).
		case !ok:
			t.Errorf("%s: key %q is gone", what, k)
		case a.dump != b.dump:
			t.Errorf("%s: key %q changed", what, k)
		case b.pttl > 0 && (a.pttl > b.pttl || a.pttl <= 0):
			t.Errorf("%s: key %q PTTL %d ms, was %d ms", what, k, a.pttl, b.pttl)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: new key %q", what, k)
		}
	}
}

// refused fails unless err wraps ErrPermission, names name, and holds none
// of the passwords.
func refused(t *testing.T, what, name string, err error, passwords ...string) {
	t.Helper()
	if !errors.Is(err, fairrw.ErrPermission) {
		t.Errorf("%s: %v, want ErrPermission", what, err)
		return
	}
	if name != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
		t.Errorf("%s: %v does not name the lock %q", what, err, name)
	}
	for _, pw := range passwords {
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error holds a password: %v", what, err)
		}
	}
}

// TestACLIsolation: two tenants, billing and shipping, each an ACL user
// built from docs/acl.md's lines, on one server. Under every policy and
// the Mutex, shipping's user cannot take, inspect, renew, release or
// force-unlock billing's locks (a plain name and a braced one): each try
// fails at once with ErrPermission naming the lock and no password, and
// billing's keys are unchanged (DUMP and PTTL). The inspector inspects and
// cannot lock; a user without the channels cannot force-unlock (its script
// refuses before any write); the operator force-unlocks both tenants.
// (The operator's commands include the fair fast path's, so it is not
// tested to be refused a lock: see docs/acl.md.)
func TestACLIsolation(t *testing.T) {
	for _, tg := range aclTargets {
		t.Run(tg.role, func(t *testing.T) {
			ctl := lateness.Start(t)
			r := redistest.StartProcess(t)
			admin := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
			pwA, pwB, pwI, pwO, pwN := itest.AclPassword(), itest.AclPassword(), itest.AclPassword(), itest.AclPassword(), itest.AclPassword()
			pws := []string{pwA, pwB, pwI, pwO, pwN}
			itest.SetTenant(t, admin, "billing", "", pwA, tg.role)
			itest.SetTenant(t, admin, "shipping", "", pwB, tg.role)
			itest.SetUser(t, admin, "billing", "", pwI, nil, "inspector")
			itest.SetUser(t, admin, "billing", "", pwO, nil, "operator")
			itest.SetUser(t, admin, "billing", "billing-nochan", pwN, func(line string) bool {
				return strings.Contains(line, " &")
			}, "tenant", tg.role)
			opts := []fairrw.Option{fairrw.WithPolicy(tg.policy)}
			a := itest.AclClient(t, r, "billing", pwA, append(opts, fairrw.WithNamespace("billing"))...)
			b := itest.AclClient(t, r, "shipping", pwB, append(opts, fairrw.WithNamespace("shipping"))...)
			bx := itest.AclClient(t, r, "shipping", pwB, opts...) // no namespace: ACL alone
			ctx := itest.TestCtx(t)

			names := []string{"billing:x", "billing:{eu}:x"}
			take := func(c *fairrw.Client, name string, read bool) *fairrw.Lease {
				t.Helper()
				var l *fairrw.Lease
				var err error
				switch {
				case tg.mutex:
					l, err = c.Mutex(name).Lock(ctx)
				case read:
					l, err = c.RWMutex(name).RLock(ctx)
				default:
					l, err = c.RWMutex(name).Lock(ctx)
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return l
			}
			held := []*fairrw.Lease{take(a, names[0], false), take(a, names[1], true)}
			take(b, "shipping:x", false)
			before := aclSnapshot(t, admin, "*billing:*")

			for _, name := range names {
				try := func(what string, f func(ctx context.Context) error) {
					t.Helper()
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					start := time.Now()
					err := f(cctx)
					// A refusal must fail at once.
					ctl.Within(fmt.Sprintf("%s %q refused", what, name), time.Since(start), time.Second)
					refused(t, what, name, err, pws...)
				}
				if tg.mutex {
					try("Mutex.TryLock", func(ctx context.Context) error { _, err := bx.Mutex(name).TryLock(ctx); return err })
					try("Mutex.Lock", func(ctx context.Context) error { _, err := bx.Mutex(name).Lock(ctx); return err })
					try("Mutex.ForceUnlock", func(ctx context.Context) error { return bx.Mutex(name).ForceUnlock(ctx) })
				} else {
					m := bx.RWMutex(name)
					try("TryLock", func(ctx context.Context) error { _, err := m.TryLock(ctx); return err })
					try("TryRLock", func(ctx context.Context) error { _, err := m.TryRLock(ctx); return err })
					try("Lock", func(ctx context.Context) error { _, err := m.Lock(ctx); return err })
					try("RLock", func(ctx context.Context) error { _, err := m.RLock(ctx); return err })
					try("ForceUnlock(Write)", func(ctx context.Context) error { return m.ForceUnlock(ctx, fairrw.Write) })
					try("ForceUnlock(Read)", func(ctx context.Context) error { return m.ForceUnlock(ctx, fairrw.Read) })
				}
				try("Inspect", func(ctx context.Context) error { _, err := bx.Inspect(ctx, name); return err })
			}
			// Renewing, releasing or waking by hand: the scripts' own
			// commands, sent by shipping's user on billing's keys.
			raw := r.Client(t, func(o *rueidis.ClientOption) {
				o.DisableCache, o.Username, o.Password = true, "shipping", pwB
			})
			for k := range before {
				for _, cmd := range []rueidis.Completed{
					raw.B().Pexpire().Key(k).Milliseconds(600000).Build(),
					raw.B().Del().Key(k).Build(),
				} {
					if err := raw.Do(ctx, cmd).Error(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
						t.Errorf("shipping's user on %q: %v, want NOPERM", k, err)
					}
				}
			}
			if err := raw.Do(ctx, raw.B().Publish().Channel(tg.chName).Message("0").Build()).Error(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
				t.Errorf("shipping's user publishing on %q: %v, want NOPERM", tg.chName, err)
			}

			// The inspector reads and does nothing else.
			ins := itest.AclClient(t, r, "billing-inspector", pwI, opts...)
			info, err := ins.Inspect(ctx, names[0])
			if err != nil || len(info.Holders) != 1 {
				t.Errorf("the inspector's Inspect: %v, %v; want one holder", info, err)
			}
			if tg.mutex {
				_, err = ins.Mutex(names[0]).TryLock(ctx)
			} else {
				_, err = ins.RWMutex(names[0]).TryLock(ctx)
			}
			refused(t, "the inspector's TryLock", names[0], err, pws...)

			// Without the channels, a force-unlock is refused before it
			// deletes anything.
			nochan := itest.AclClient(t, r, "billing-nochan", pwN, opts...)
			if tg.mutex {
				err = nochan.Mutex(names[0]).ForceUnlock(ctx)
			} else {
				err = nochan.RWMutex(names[0]).ForceUnlock(ctx, fairrw.Write)
			}
			refused(t, "ForceUnlock without the channels", names[0], err, pws...)

			sameKeys(t, "billing's keys after the refused calls", before, aclSnapshot(t, admin, "*billing:*"))
			for _, l := range held {
				select {
				case <-l.Done():
					t.Errorf("billing's lease ended: %v", l.Err())
				default:
				}
			}

			// The operator frees both tenants' locks.
			op := itest.AclClient(t, r, "locks-operator", pwO, opts...)
			for _, name := range []string{names[0], "shipping:x"} {
				if tg.mutex {
					err = op.Mutex(name).ForceUnlock(ctx)
				} else {
					err = op.RWMutex(name).ForceUnlock(ctx, fairrw.Write)
				}
				if err != nil {
					t.Errorf("the operator's ForceUnlock(%q): %v", name, err)
				}
			}
		})
	}
}

// TestACLAuth: a wrong password fails New with ErrPermission, promptly
// and without the password in the message; the right one works (Ping,
// Lock); Ping of a user not allowed PING is ErrPermission, not
// ErrUnavailable.
func TestACLAuth(t *testing.T) {
	ctl := lateness.Start(t)
	r := redistest.StartProcess(t)
	admin := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	pw, wrong := itest.AclPassword(), itest.AclPassword()
	itest.SetTenant(t, admin, "billing", "", pw, "writer-preferring")
	itest.SetTenant(t, admin, "billing", "billing-noping", pw, "writer-preferring")
	if err := admin.Do(context.Background(), admin.B().Arbitrary("ACL", "SETUSER", "billing-noping", "-ping").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	ctx := itest.TestCtx(t)

	opt := r.ClientOption()
	opt.Username, opt.Password = "billing", wrong
	start := time.Now()
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err == nil {
		_ = c.Close()
	}
	refused(t, "New with a wrong password", "", err, wrong, pw)
	ctl.Within("New with a wrong password", time.Since(start), 2*time.Second)
	if err != nil && !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("New with a wrong password: %v does not quote Redis's WRONGPASS", err)
	}

	good := itest.AclClient(t, r, "billing", pw, fairrw.WithNamespace("billing"))
	if err := good.Ping(ctx); err != nil {
		t.Errorf("Ping with the right password: %v", err)
	}
	l, err := good.RWMutex("billing:auth").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with the right password: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	noping := itest.AclClient(t, r, "billing-noping", pw)
	refused(t, "Ping without +ping", "", noping.Ping(ctx), pw)
}

// TestACLConformance: the two tenants run the conformance workload (its
// oracle checks every grant, lease, unlock and Inspect) at the same time
// on one server, each as its ACL user from docs/acl.md (the tenant block and
// every policy's, without tracking) and on its own namespace, under every
// policy and the Mutex: every lock works.
func TestACLConformance(t *testing.T) {
	const dur = 4 * time.Second
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for ti, tg := range aclTargets {
		t.Run(tg.role, func(t *testing.T) {
			r := redistest.StartProcess(t)
			admin := r.Client(t, func(o *rueidis.ClientOption) {
				o.DisableCache = true
				o.ClientName = itest.ConfAdminName
			})
			kind := itest.ConfRWKind
			if tg.mutex {
				kind = itest.ConfMutexKind
			}
			for i, ns := range []string{"billing", "shipping"} {
				pw := itest.AclPassword()
				// One user holding every policy: docs/acl.md's blocks
				// compose, whichever policy the workload runs.
				itest.SetTenant(t, admin, ns, "", pw, everyPolicy...)
				ct := itest.ConfTarget{Name: tg.role + "-" + ns, Kind: kind, Policy: tg.policy,
					Tenant: &itest.ConfTenant{Ns: ns, User: ns, Password: pw, Server: r, Admin: admin}}
				t.Run(ns, func(t *testing.T) {
					t.Parallel()
					itest.RunConformance(t, ct, seed, seed+uint64(ti*2+i)*0x9e3779b97f4a7c15, dur)
				})
			}
		})
	}
}

// TestACLNoAuth: a server whose default user needs a password, and a
// Client that gives none. Redis answers NOAUTH; New and every call fail at
// once with ErrPermission, not ErrUnavailable after the ctx's deadline, and
// nothing is written. With the password the same Client options work.
func TestACLNoAuth(t *testing.T) {
	ctl := lateness.Start(t)
	r := redistest.StartProcess(t)
	admin := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	pw := itest.AclPassword()
	ctx := itest.TestCtx(t)
	// The admin connection stays authenticated: ACL SETUSER does not drop
	// the connections already made.
	if err := admin.Do(ctx, admin.B().Arbitrary("ACL", "SETUSER", "default", "resetpass", ">"+pw).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Do(context.Background(), admin.B().Arbitrary("ACL", "SETUSER", "default", "nopass").Build()).Error()
	})
	opt := r.ClientOption()
	start := time.Now()
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err == nil {
		// Redis may not have answered within New's first moment: the
		// calls must then fail promptly instead.
		defer c.Close()
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = c.RWMutex("noauth:lock").Lock(callCtx)
		refused(t, "Lock without a password", "noauth:lock", err, pw)
		refused(t, "Ping without a password", "", c.Ping(callCtx), pw)
	} else {
		refused(t, "New without a password", "", err, pw)
	}
	t.Logf("refused: %v", err)
	ctl.Within("refusing a Client without a password", time.Since(start), 5*time.Second)
	if err != nil && !strings.Contains(err.Error(), "NOAUTH") && !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("%v does not quote Redis's refusal", err)
	}
	if n, err := admin.Do(ctx, admin.B().Dbsize().Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("DBSIZE after the refused calls: %d, %v; want nothing written", n, err)
	}
	opt.Password = pw
	good, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatalf("New with the password: %v", err)
	}
	defer good.Close()
	l, err := good.RWMutex("noauth:lock").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with the password: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
