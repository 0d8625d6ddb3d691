package acl

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	wirekeys "github.com/fairrw/rwlock/internal/wire"
)

// TestACLShortNamespaceIsolation: WithNamespace allows namespaces of one
// or two characters, and docs/acl.md's fair-key patterns spell the name's
// length with '?'. A '?' matches any character, not only a digit, so the
// patterns of a tenant t, such as "fairrw:????:t:*", also matched the
// fair keys of another tenant's names that read "<ns>:t:" after a short
// length: the key "fairrw:5:{a:b:x}" of tenant a's lock "a:b:x" matches
// tenant b's "fairrw:????:b:*" ('?'s read "5:{a"), and "fairrw:7:a:{b:x}"
// of "a:{b:x}" matches "fairrw:???:{b:*". Tenant b's user could then
// delete tenant a's lock state, or publish on its wake-up channel. Each
// tenant here runs docs/acl.md's lines as they are; the other's keys and
// channel must be refused with NOPERM, whatever the names.
func TestACLShortNamespaceIsolation(t *testing.T) {
	cases := []struct{ victim, attacker, name string }{
		{"a", "b", "a:b:x"},
		{"a", "b", "a:{b:x}"},
		{"a", "billing", "a:billing:{x}"},
		{"ab", "c", "ab:c:{x}"},
		{"ab", "c", "ab:{c:x}"},
		{"7", "b", "7:b:x"},
	}
	r := redistest.StartProcess(t)
	admin := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx := itest.TestCtx(t)
	users := map[string]string{}
	for _, c := range cases {
		for _, ns := range []string{c.victim, c.attacker} {
			if _, ok := users[ns]; !ok {
				users[ns] = itest.AclPassword()
				itest.SetTenant(t, admin, ns, "", users[ns], "writer-preferring")
			}
		}
	}
	for _, c := range cases {
		v := itest.AclClient(t, r, c.victim, users[c.victim], fairrw.WithNamespace(c.victim))
		// A waiter's queue entry makes the lock keep its state, readers
		// zset (the holder's reads) and queue.
		l, err := v.RWMutex(c.name).RLock(ctx)
		if err != nil {
			t.Fatalf("%s: RLock: %v", c.name, err)
		}
		if _, err := v.RWMutex(c.name).TryLock(ctx); err == nil {
			t.Fatalf("%s: TryLock beside a read succeeded", c.name)
		}
		raw := r.Client(t, func(o *rueidis.ClientOption) {
			o.DisableCache, o.Username, o.Password = true, c.attacker, users[c.attacker]
		})
		fk := wirekeys.Fair(c.name)
		for _, k := range []string{fk.State, fk.Readers, fk.Fence} {
			err := raw.Do(ctx, raw.B().Del().Key(k).Build()).Error()
			if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
				t.Errorf("tenant %q's user deleting %q (tenant %q's lock %q): %v, want NOPERM", c.attacker, k, c.victim, c.name, err)
			}
		}
		err = raw.Do(ctx, raw.B().Publish().Channel(fk.Channel).Message("r").Build()).Error()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("tenant %q's user publishing on %q (tenant %q's lock %q): %v, want NOPERM", c.attacker, fk.Channel, c.victim, c.name, err)
		}
		_ = l.Unlock(ctx)
	}
}
