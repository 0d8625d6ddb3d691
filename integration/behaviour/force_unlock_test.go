package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestForceUnlockRefusesAnotherRecord: a fair lock's state records its
// policy and protocol, and an acquire of another is refused with
// ErrPolicyMismatch, so that no two rule sets apply to one lock. A
// ForceUnlock ran its own Client's rules on whatever the state recorded:
// a WriterPreferring Client freeing a PhaseFair lock's writer did not
// admit the readers waiting at that moment ahead of the next writer (the
// writer at the head of the queue was granted, and the readers waited
// through a second write phase); a Client of another protocol ran its
// scripts on a state its protocol may misread. Both must be refused with
// ErrPolicyMismatch, changing nothing.
func TestForceUnlockRefusesAnotherRecord(t *testing.T) {
	e := itest.NewBadEnv(t)
	pf := e.Client(t, fairrw.PhaseFair(), fairrw.WithCohorts(false)) // its second writer queues in Redis
	others := map[string]*fairrw.Client{
		"writer-preferring": e.Client(t, fairrw.WriterPreferring()),
		"next protocol":     protocolClient(t, e, fairrw.PhaseFair(), fwire.Protocol+1),
	}
	for what, other := range others {
		t.Run(what, func(t *testing.T) {
			e.Flush(t)
			ctx := itest.TestCtx(t)
			const name = "force:record"
			a := itest.MustLock(t, pf.RWMutex(name), fairrw.Write)
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			reader, writer := make(chan error, 1), make(chan error, 1)
			go func() {
				l, err := pf.RWMutex(name).RLock(wctx)
				if err == nil {
					err = l.Unlock(context.Background())
				}
				reader <- err
			}()
			for deadline := time.Now().Add(10 * time.Second); len(itest.Inspect(t, pf, name).WaitingReaders) == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no waiting reader after 10s")
				}
			}
			go func() {
				l, err := pf.RWMutex(name).Lock(wctx)
				if err == nil {
					err = l.Unlock(context.Background())
				}
				writer <- err
			}()
			waitQueued(t, pf, name)

			err := other.RWMutex(name).ForceUnlock(ctx, fairrw.Write)
			if !errors.Is(err, fairrw.ErrPolicyMismatch) {
				t.Errorf("ForceUnlock of a phase-fair/%d lock by a %s Client: %v, want ErrPolicyMismatch", fwire.Protocol, what, err)
			}
			if err == nil {
				// What it did: the queued writer is granted before the
				// reader that waited through the forced write.
				select {
				case err := <-writer:
					t.Errorf("the queued writer went first (%v): the waiting reader waits through a second write phase", err)
					writer <- nil
				case err := <-reader:
					reader <- err
				case <-time.After(2 * time.Second):
				}
			} else if info := itest.Inspect(t, pf, name); len(info.Holders) != 1 || info.Holders[0].Mode != fairrw.Write ||
				len(info.WaitingReaders) != 1 || len(info.WaitingWriters) != 1 {
				t.Errorf("a refused ForceUnlock changed the lock: %+v", info)
			}
			select {
			case <-a.Done():
				if err != nil {
					t.Errorf("the holder's lease ended: %v", a.Err())
				}
			default:
				if err := a.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			}
			for _, ch := range []chan error{reader, writer} {
				select {
				case err := <-ch:
					if err != nil {
						t.Errorf("a waiter: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Error("a waiter still waits 10s after the holder unlocked")
				}
			}
		})
	}
}
