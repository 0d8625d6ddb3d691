package behaviour

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestGhostHoldIsNotReentered: an Unlock whose write Redis lost (a failover
// promoted a replica that never got it) leaves a ghost hold under the
// Lease's owner after the Lease ended. The handle's next acquire is a new
// owner: it is not a re-entry of the ghost (no old token, no count left
// behind), it waits for the ghost's lease like any other owner's, and its
// Unlock leaves nothing.
//
// The lost unlock is simulated on one node: every key of the lock is saved
// (DUMP, PTTL) while held, and restored after the Unlock.
func TestGhostHoldIsNotReentered(t *testing.T) {
	r := redistest.Start(t)
	// Leases of 3 s, not 1 s: with two suites side by side, 1 s watchdog
	// leases on the one shared Redis were lost before the test's DUMP.
	const lease = 3 * time.Second
	for _, p := range itest.Policies {
		for _, tc := range []struct {
			ghost, next fairrw.Mode
			waits       bool // whether the next acquire must wait for the ghost
		}{
			{fairrw.Write, fairrw.Write, true},
			{fairrw.Write, fairrw.Read, true},
			{fairrw.Read, fairrw.Write, true},
			{fairrw.Read, fairrw.Read, false}, // reads share: granted, as another owner
		} {
			t.Run(p.String()+"/"+tc.ghost.String()+"-then-"+tc.next.String(), func(t *testing.T) {
				t.Parallel()
				env := itest.NewEnv(t, r, itest.Transports[0], p)
				c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
				n := "ghost:" + t.Name()
				m := c.RWMutex(n)

				first := itest.MustLock(t, m, tc.ghost)
				ghostOwner := first.Owner()
				saved := dumpLock(t, env.Raw, n)
				itest.MustUnlock(t, first)
				restoreLock(t, env.Raw, saved)
				remaining := ghostLeft(t, c, n, ghostOwner, tc.ghost)

				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				second, err := locktest.Acquire(ctx, m, tc.next, true)
				waited := time.Since(start)
				if err != nil {
					t.Fatalf("%s after the ghost: %v", tc.next, err)
				}
				owner := second.Owner()
				if tc.waits && waited < remaining*3/4 {
					t.Fatalf("%s granted after %v, while the ghost's lease had %v left: a re-entry of the ghost", tc.next, waited, remaining)
				}
				if tc.next == fairrw.Write && second.Token() <= first.Token() {
					t.Fatalf("token %d after the ghost's %d: want greater", second.Token(), first.Token())
				}
				if !tc.waits {
					// Hold on (renewed) until the ghost's lease has run out: a
					// re-entry would have renewed the ghost's count with it.
					time.Sleep(remaining + lease/2)
				}
				itest.MustUnlock(t, second)

				// Nothing is left held: another handle gets the write at once.
				other, err := locktest.Acquire(ctx, c.RWMutex(n), fairrw.Write, false)
				if err != nil {
					t.Fatalf("another owner's TryLock after the new owner's Unlock: %v; keys: %s", err, describeKeys(t, env.Raw, n))
				}
				itest.MustUnlock(t, other)
				locktest.EventuallyNoKeys(t, env, n)
				if owner == ghostOwner {
					t.Fatalf("the next acquire kept the ghost's owner %q", ghostOwner)
				}
			})
		}
	}
}

// savedKey is one key of a lock as DUMP and PTTL saw it.
type savedKey struct {
	name, dump string
	pttl       int64
}

// dumpLock saves every key of lock n but its last fencing token (which an
// unlock does not change).
func dumpLock(t *testing.T, raw rueidis.Client, n string) []savedKey {
	t.Helper()
	keys, err := raw.Do(itest.TestCtx(t), raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	var saved []savedKey
	for _, k := range keys {
		if !strings.Contains(k, n) || k == fwire.Fence(n) {
			continue
		}
		dump, err := raw.Do(itest.TestCtx(t), raw.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		pttl, err := raw.Do(itest.TestCtx(t), raw.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil || pttl <= 0 {
			t.Fatalf("PTTL %s = %d, %v; want a lease", k, pttl, err)
		}
		saved = append(saved, savedKey{k, dump, pttl})
	}
	if len(saved) == 0 {
		t.Fatalf("no keys for %s", n)
	}
	return saved
}

// restoreLock puts the saved keys back with their PTTLs, as if the unlock
// never happened.
func restoreLock(t *testing.T, raw rueidis.Client, saved []savedKey) {
	t.Helper()
	for _, k := range saved {
		if err := raw.Do(itest.TestCtx(t), raw.B().Restore().Key(k.name).Ttl(k.pttl).SerializedValue(k.dump).Replace().Build()).Error(); err != nil {
			t.Fatalf("RESTORE %s: %v", k.name, err)
		}
	}
}

// ghostLeft returns how long the ghost's hold has left, as Inspect reads it
// from the hold's own deadline: under the fair policies the keys outlive
// their holds by up to half a lease (the expiry horizon), so a key's PTTL
// overstates it.
func ghostLeft(t *testing.T, c *fairrw.Client, n, owner string, mode fairrw.Mode) time.Duration {
	t.Helper()
	info, err := c.Inspect(itest.TestCtx(t), n)
	if err != nil {
		t.Fatalf("Inspect after restoring the ghost: %v", err)
	}
	for _, h := range info.Holders {
		if h.Owner == owner && h.Mode == mode {
			return h.Remaining
		}
	}
	t.Fatalf("Inspect does not show the ghost %s hold of %s: %+v", mode, owner, info.Holders)
	return 0
}

// describeKeys lists the keys that contain n, with their PTTL and, for
// hashes, their fields, for failure reports.
func describeKeys(t *testing.T, raw rueidis.Client, n string) string {
	t.Helper()
	keys, err := raw.Do(itest.TestCtx(t), raw.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, k := range keys {
		if !strings.Contains(k, n) {
			continue
		}
		pttl, _ := raw.Do(itest.TestCtx(t), raw.B().Pttl().Key(k).Build()).AsInt64()
		fields, _ := raw.Do(itest.TestCtx(t), raw.B().Hgetall().Key(k).Build()).AsStrMap()
		fmt.Fprintf(&b, "%q (pttl %d) %v; ", k, pttl, fields)
	}
	return b.String()
}
