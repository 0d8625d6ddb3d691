package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/fairrw"
)

// TestPolicyMismatchReadersOutliveState: under the fair policies the state
// hash covers the first reader's lease, and a later reader's read (in the
// readers key) can outlive it. A Redisson-format acquire (read-write lock or
// Mutex) on the name must still see the fair lock and refuse with
// ErrPolicyMismatch, not grant a write beside a live fair reader (found by
// the adversarial pass on the fair scripts: the Redisson scripts looked only
// at the state hash).
func TestPolicyMismatchReadersOutliveState(t *testing.T) {
	e := newWireEnv(t)
	redisson := e.client(t, fairrw.WithPolicy(fairrw.Redisson()))
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			name := "mismatch:outlive:" + p.String()
			fair := e.client(t, fairrw.WithPolicy(p))
			short, err := fair.RWMutex(name).RLock(testCtx(t), fairrw.WithLease(40*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			long, err := fair.RWMutex(name).RLock(testCtx(t), fairrw.WithLease(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			<-short.Done()
			// Wait until the state hash has expired while the long read
			// still holds: the case under test.
			fk := compat.Fair(name)
			deadline := time.Now().Add(3 * time.Second)
			for {
				n, err := e.raw.Do(testCtx(t), e.raw.B().Exists().Key(fk.State).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the state hash %s outlived the short read by 3s; this test needs it gone", fk.State)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if n, err := e.raw.Do(testCtx(t), e.raw.B().Exists().Key(fk.Readers).Build()).AsInt64(); err != nil || n != 1 {
				t.Fatalf("the readers key %s: exists %d, %v; want the long read there", fk.Readers, n, err)
			}

			if l, err := redisson.RWMutex(name).TryLock(testCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(testCtx(t))
				}
				t.Fatalf("Redisson write beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			if l, err := redisson.RWMutex(name).TryRLock(testCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(testCtx(t))
				}
				t.Fatalf("Redisson read beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			if l, err := redisson.Mutex(name).TryLock(testCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(testCtx(t))
				}
				t.Fatalf("Mutex beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			e.w.wantMissing(name)
			if err := long.Unlock(testCtx(t)); err != nil {
				t.Fatalf("the fair reader's Unlock: %v", err)
			}
		})
	}
}
