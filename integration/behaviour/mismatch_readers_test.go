package behaviour

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestPolicyMismatchReadersOutliveState: under the fair policies the state
// hash covers the first reader's lease, and a later reader's read (in the
// readers key) can outlive it. A Redisson-format acquire (read-write lock or
// Mutex) on the name must still see the fair lock and refuse with
// ErrPolicyMismatch, not grant a write beside a live fair reader (found by
// the adversarial pass on the fair scripts: the Redisson scripts looked only
// at the state hash).
func TestPolicyMismatchReadersOutliveState(t *testing.T) {
	e := itest.NewWireEnv(t)
	redisson := e.Client(t, fairrw.WithPolicy(fairrw.Redisson()))
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			name := "mismatch:outlive:" + p.String()
			fair := e.Client(t, fairrw.WithPolicy(p))
			short, err := fair.RWMutex(name).RLock(itest.TestCtx(t), fairrw.WithLease(40*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			long, err := fair.RWMutex(name).RLock(itest.TestCtx(t), fairrw.WithLease(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			<-short.Done()
			// Wait until the state hash has expired while the long read
			// still holds: the case under test.
			waitStateGone(t, e.Raw, name, 3*time.Second)
			fk := fwire.Fair(name)
			if n, err := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Exists().Key(fk.Readers).Build()).AsInt64(); err != nil || n != 1 {
				t.Fatalf("the readers key %s: exists %d, %v; want the long read there", fk.Readers, n, err)
			}

			if l, err := redisson.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(itest.TestCtx(t))
				}
				t.Fatalf("Redisson write beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			if l, err := redisson.RWMutex(name).TryRLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(itest.TestCtx(t))
				}
				t.Fatalf("Redisson read beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			if l, err := redisson.Mutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
				if err == nil {
					_ = l.Unlock(itest.TestCtx(t))
				}
				t.Fatalf("Mutex beside a live fair reader: %v, want ErrPolicyMismatch", err)
			}
			e.W.WantMissing(name)
			if err := long.Unlock(itest.TestCtx(t)); err != nil {
				t.Fatalf("the fair reader's Unlock: %v", err)
			}
		})
	}
}

// waitStateGone waits, up to within, until the fair state hash of name has
// expired while a read it recorded holds on: the case the callers test.
func waitStateGone(t *testing.T, raw rueidis.Client, name string, within time.Duration) {
	t.Helper()
	waitKeysGone(t, raw, within, fwire.Fair(name).State)
}

// waitKeysGone waits, up to within, until none of keys exists.
func waitKeysGone(t *testing.T, raw rueidis.Client, within time.Duration, keys ...string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		n, err := raw.Do(itest.TestCtx(t), raw.B().Exists().Key(keys...).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %v still there after %v", n, keys, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
