package integration

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/lua"
)

// TestScriptsLoad loads every embedded script into a real Redis: each must
// compile there.
func TestScriptsLoad(t *testing.T) {
	e := newWireEnv(t)
	names := lua.Names()
	if len(names) == 0 {
		t.Fatal("no scripts embedded")
	}
	for _, name := range names {
		if _, err := e.raw.Do(testCtx(t), e.raw.B().ScriptLoad().Script(lua.Source(name)).Build()).ToString(); err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
		}
	}
}

// TestScriptFlushIsInvisible: after SCRIPT FLUSH (as after a restart or a
// failover) locks, unlocks and renewals work on: EVALSHA falls back to EVAL.
func TestScriptFlushIsInvisible(t *testing.T) {
	e := newWireEnv(t)
	c := e.client(t, fairrw.WithLeaseTime(600*time.Millisecond))
	m := c.RWMutex("scripts:flush")
	w := mustLock(t, m, fairrw.Write)
	flush := func() {
		if err := e.raw.Do(testCtx(t), e.raw.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	r := mustFurther(t, w, fairrw.Read) // a downgrade: the same owner's read
	flush()
	mustUnlock(t, w)
	flush()
	// Renewal after a flush: the lease outlives several lease times.
	w2 := mustLock(t, c.RWMutex("scripts:flush:2"), fairrw.Write)
	flush()
	sleepLeases(3)
	for _, l := range []*fairrw.Lease{r, w2} {
		select {
		case <-l.Done():
			t.Fatalf("lease lost after SCRIPT FLUSH: %v", l.Err())
		default:
		}
	}
	flush()
	mustUnlock(t, r)
	mustUnlock(t, w2)
}
