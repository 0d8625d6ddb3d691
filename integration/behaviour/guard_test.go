package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

type adv3Key struct{}

// TestGuardEndedLease: Guard of a lease that has already ended. "Guard
// returns a context derived from ctx ... that is also cancelled when the
// lease ends": the lease has ended, so the context must be done as
// returned, as context.WithCancel of a done parent is.
func TestGuardEndedLease(t *testing.T) {
	r := redistest.StartProcess(t)
	c := itest.NewClient(t, r, itest.Transports[1])
	ctx := itest.TestCtx(t)
	miss := 0
	for i := 0; i < 200; i++ {
		l, err := c.RWMutex("faults:guard").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		itest.MustUnlock(t, l)
		g, cancel := l.Guard(context.WithValue(ctx, adv3Key{}, 1))
		if g.Err() == nil {
			miss++
		}
		<-g.Done()
		if !errors.Is(context.Cause(g), hidden.ErrUnlocked) {
			t.Fatalf("cause %v, want ErrUnlocked", context.Cause(g))
		}
		cancel()
	}
	if miss > 0 {
		t.Errorf("Guard of an already-unlocked lease returned a context not yet done in %d of 200 tries", miss)
	}
}

// TestGuardBasics: values and deadline kept, cancel before and after
// the lease ends, nil and double Unlock send nothing (Redis stopped).
func TestGuardBasics(t *testing.T) {
	r := redistest.StartProcess(t)
	c := itest.NewClient(t, r, itest.Transports[1])
	ctx := itest.TestCtx(t)
	l, err := c.RWMutex("faults:guard2").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dl, dlCancel := context.WithTimeout(context.WithValue(ctx, adv3Key{}, 7), time.Minute)
	defer dlCancel()
	g1, cancel1 := l.Guard(dl)
	g2, cancel2 := l.Guard(dl)
	if g1.Value(adv3Key{}) != 7 {
		t.Fatal("value lost")
	}
	if d1, _ := g1.Deadline(); d1 != func() time.Time { d, _ := dl.Deadline(); return d }() {
		t.Fatal("deadline lost")
	}
	cancel1()
	if !errors.Is(context.Cause(g1), context.Canceled) || g1.Err() == nil {
		t.Fatalf("cancel before the end: %v", context.Cause(g1))
	}
	itest.MustUnlock(t, l)
	<-g2.Done()
	if !errors.Is(context.Cause(g2), hidden.ErrUnlocked) {
		t.Fatalf("cause %v", context.Cause(g2))
	}
	cancel2()
	if !errors.Is(context.Cause(g2), hidden.ErrUnlocked) {
		t.Fatalf("cancel after the end changed the cause: %v", context.Cause(g2))
	}
	r.Stop(t)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var nl *fairrw.Lease
	if err := nl.Unlock(short); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock(nil): %v", err)
	}
	if err := l.Unlock(short); !errors.Is(err, fairrw.ErrNotHeld) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("double Unlock: %v", err)
	}
}
