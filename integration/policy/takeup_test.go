package policy

import (
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/integration/internal/itest"
)

// TestTakeUpCountsFromTheAttempt: a grant a release made on a waiter's
// behalf lasts its queue entry; the waiter's first attempt after it, seen
// or not seen the grant (the conformance test found one sent for a
// periodic refresh), takes it up: Redis then keeps the hold exactly the
// lease asked from then, not the entry's whole lease. A further hold
// clears the take-up, so a late copy of an earlier attempt only extends.
func TestTakeUpCountsFromTheAttempt(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			f := newFairRaw(t, e.Raw, p, "takeup:"+p)
			deadline := func() time.Duration {
				wd, _ := strconv.ParseInt(f.field("wdeadline"), 10, 64)
				return time.Until(time.UnixMilli(wd))
			}
			if v := f.acquire("h:1", "w", 3*time.Second, 3*time.Second, "1", 0, "0"); v[0] != 1 {
				t.Fatalf("holder: %v", v)
			}
			if v := f.acquire("w:1", "w", 100*time.Millisecond, 3*time.Second, "1", 0, "0"); v[0] != 0 {
				t.Fatalf("waiter: %v", v)
			}
			if _, g, _ := f.unlock("h:1", "w", 3*time.Second, false, 0, 0, 0, 0, false); g != "w:1" {
				t.Fatalf("the release granted %q, want w:1", g)
			}
			if left := deadline(); left < time.Second {
				t.Fatalf("the grant on the waiter's behalf lasts %v, want its queue entry's", left)
			}
			// The waiter's next attempt, before it saw its grant.
			if v := f.acquire("w:1", "w", 100*time.Millisecond, 3*time.Second, "1", 0, "0"); v[0] != 1 {
				t.Fatalf("the waiter's attempt after its grant: %v, want granted", v)
			}
			if left := deadline(); left > 100*time.Millisecond+5*time.Millisecond {
				t.Fatalf("after the take-up Redis keeps the hold %v, want the 100ms lease asked", left)
			}
			// A further hold with a longer lease, then a late copy of a
			// first attempt: the hold keeps the further hold's deadline.
			if v := f.acquire("w:1", "w", 2*time.Second, 3*time.Second, "0", 2, "0"); v[0] != 1 {
				t.Fatalf("further hold: %v", v)
			}
			if v := f.acquire("w:1", "w", 100*time.Millisecond, 3*time.Second, "1", 0, "0"); v[0] != 1 {
				t.Fatalf("late copy: %v", v)
			}
			if left := deadline(); left < time.Second {
				t.Fatalf("a late copy of a first attempt cut the further hold to %v", left)
			}
			f.check("after the take-up")
			f.unlock("w:1", "w", 3*time.Second, false, 0, 0, 0, 0, false)
		})
	}
}
