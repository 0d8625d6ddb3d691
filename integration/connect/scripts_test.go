package connect

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/lua"
)

// TestScriptsLoad loads every embedded script into a real Redis: each must
// compile there.
func TestScriptsLoad(t *testing.T) {
	e := itest.NewWireEnv(t)
	names := lua.Names()
	if len(names) == 0 {
		t.Fatal("no scripts embedded")
	}
	for _, name := range names {
		if _, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().ScriptLoad().Script(lua.Source(name)).Build()).ToString(); err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
		}
	}
}

// TestScriptFlushIsInvisible: after SCRIPT FLUSH (as after a restart or a
// failover) locks, unlocks and renewals work on: EVALSHA falls back to EVAL.
func TestScriptFlushIsInvisible(t *testing.T) {
	e := itest.NewWireEnv(t)
	c := e.Client(t, fairrw.WithLeaseTime(600*time.Millisecond))
	m := c.RWMutex("scripts:flush")
	w := itest.MustLock(t, m, fairrw.Write)
	flush := func() {
		if err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	r := itest.MustFurther(t, w, fairrw.Read) // a downgrade: the same owner's read
	flush()
	itest.MustUnlock(t, w)
	flush()
	// Renewal after a flush: the lease outlives several lease times.
	w2 := itest.MustLock(t, c.RWMutex("scripts:flush:2"), fairrw.Write)
	flush()
	itest.SleepLeases(3)
	for _, l := range []*fairrw.Lease{r, w2} {
		select {
		case <-l.Done():
			t.Fatalf("lease lost after SCRIPT FLUSH: %v", l.Err())
		default:
		}
	}
	flush()
	itest.MustUnlock(t, r)
	itest.MustUnlock(t, w2)
}
