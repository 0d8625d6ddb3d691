package lease

import (
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestFairFastPathProbesReaders: the state hash S may expire while a read
// hold in R is alive (S's expiry covers the first reader's deadline plus
// half its lease; a later reader's entry moves R's expiry, not S's), so
// S's absence does not tell that no one holds: the fast acquire must probe
// R (and Q, W, A) itself. A writer arriving then is refused. A fast path
// that probed S, X and M alone (issue 35's candidate) would grant it beside
// the live reader: this test fails then.
func TestFairFastPathProbesReaders(t *testing.T) {
	const lease = 2000 // ms
	e := itest.NewWireEnv(t)
	itest.ForEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		n := "fair:probe-readers:" + code
		fk := fwire.Fair(n)
		ctx := itest.TestCtx(t)
		acquire := func(mode, owner string) ([]int64, error) {
			res := e.Raw.Do(ctx, e.Raw.B().Eval().Script(lua.FairAcquire()).Numkeys(9).
				Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fwire.Fence(n), fk.Channel, n, fwire.OwnerMarker(n, owner)).
				Arg(itest.Args([]string{fwire.PolicyRecord(code, fwire.Protocol), mode, owner, strconv.Itoa(lease), strconv.Itoa(lease)}, itest.Stamped(), []string{"publish", "0", "0", "0"})...).Build())
			if v, err := res.AsInt64(); err == nil {
				return []int64{1, v}, nil // the fast path's grant: its token alone
			}
			return res.AsIntSlice()
		}
		if v, err := acquire("r", "reader-1:1"); err != nil || v[0] != 1 {
			t.Fatalf("first read: %v, %v", v, err)
		}
		if v, err := acquire("r", "reader-2:1"); err != nil || v[0] != 1 {
			t.Fatalf("second read: %v, %v", v, err)
		}
		second := time.Now()
		// S would expire by itself 1.5 leases after the first read, which
		// a second read late in the first one's lease outlives; a window
		// of 0.3 leases that a slow machine misses. Its expiry is brought
		// forward instead: the state is the one the scripts reach by
		// themselves, S gone and the second read's entry alive.
		if err := e.Raw.Do(ctx, e.Raw.B().Pexpire().Key(fk.State).Milliseconds(1).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		for {
			k, err := e.Raw.Do(ctx, e.Raw.B().Exists().Key(fk.State).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if took := time.Since(second); took > lease*time.Millisecond/2 {
			t.Fatalf("the write's attempt comes %v after the second read, more than half its %d ms lease: the read may have run out", took, lease)
		}
		v, err := acquire("w", "writer:1")
		if err != nil {
			t.Fatal(err)
		}
		if v[0] == 1 {
			t.Fatalf("a write was granted (token %d) while the second read holds, its state hash expired", v[1])
		}
	})
}
