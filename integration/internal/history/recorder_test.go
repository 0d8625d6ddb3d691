package history

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

func newClient(t *testing.T, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	_, opt := redistest.Miniredis(t)
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// guarded is a lock name with the Store it guards and the increments the
// Store accepted.
type guarded struct {
	name     string
	store    Store
	accepted atomic.Int64
}

// TestRecorderMiniredis: 8 workers make random acquires (reads and writes,
// waiting and trying, with reentrant, downgrading and upgrading holds nested
// in some) on 2 lock names, through a Recorder: 200 each under the default
// policy, 50 under the others (miniredis's Lua is slow under -race); the
// history must pass Verify and the guarded Stores lose no update.
func TestRecorderMiniredis(t *testing.T) {
	for _, tt := range []struct {
		policy fairrw.Policy
		ops    int
	}{{fairrw.WriterPreferring(), 200}, {fairrw.PhaseFair(), 50}, {fairrw.Redisson(), 50}} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			t.Parallel()
			c := newClient(t, fairrw.WithPolicy(tt.policy))
			rec := NewRecorder()
			locks := []*guarded{{name: "history:a"}, {name: "history:b"}}
			var wg sync.WaitGroup
			for worker := range 8 {
				wg.Go(func() { hammer(t, c, rec, locks, uint64(worker), tt.ops) })
			}
			wg.Wait()
			Verify(t, rec)
			for _, g := range locks {
				if err := g.store.Check(int(g.accepted.Load())); err != nil {
					t.Errorf("%s: %v", g.name, err)
				}
			}
		})
	}
}

// hammer makes one worker's n random acquires, one handle per name (each
// acquire a new owner).
func hammer(t *testing.T, c *fairrw.Client, rec *Recorder, locks []*guarded, seed uint64, n int) {
	rng := rand.New(rand.NewPCG(seed, 42))
	handles := make([]*fairrw.RWMutex, len(locks))
	for i, g := range locks {
		handles[i] = c.RWMutex(g.name)
	}
	for range n {
		i := rng.IntN(len(locks))
		mode := fairrw.Read
		if rng.IntN(10) < 3 {
			mode = fairrw.Write
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := rec.Acquire(ctx, handles[i], mode, rng.IntN(4) == 0)
		switch {
		case errors.Is(err, fairrw.ErrNotAcquired):
		case err != nil:
			t.Errorf("acquire %s: %v", mode, err)
		default:
			use(t, locks[i], l)
			if rng.IntN(5) == 0 {
				nest(ctx, t, rec, l, rng)
			}
			if err := rec.Release(ctx, l); err != nil {
				t.Errorf("release %s: %v", mode, err)
			}
		}
		cancel()
	}
}

// use writes to the guarded Store under a write lease.
func use(t *testing.T, g *guarded, l *fairrw.Lease) {
	if hidden.Mode(l) != fairrw.Write {
		return
	}
	if !g.store.Increment(l.Token()) {
		t.Errorf("%s: write token %d refused, highest %d", g.name, l.Token(), g.store.Highest())
		return
	}
	g.accepted.Add(1)
}

// nest takes a further hold for the owner of outer: under a write, a read
// (downgrade) or the write again (reentrant); under a read, another read,
// or the write, which must be refused (no upgrade).
func nest(ctx context.Context, t *testing.T, rec *Recorder, outer *fairrw.Lease, rng *rand.Rand) {
	mode := fairrw.Read
	if rng.IntN(2) == 0 {
		mode = fairrw.Write
	}
	inner, err := rec.Further(ctx, outer, mode)
	if hidden.Mode(outer) == fairrw.Read && mode == fairrw.Write {
		if !errors.Is(err, hidden.ErrUpgrade) || !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Errorf("upgrade: %v, want ErrUpgrade and ErrNotAcquired", err)
		}
		return
	}
	if err != nil {
		t.Errorf("nested %s under %s: %v", mode, hidden.Mode(outer), err)
		return
	}
	if err := rec.Release(ctx, inner); err != nil {
		t.Errorf("release nested %s: %v", mode, err)
	}
}

// TestRecorderLostLease: a lease that runs out before its Unlock ends its
// hold when Done closes (a Lost op), another owner then takes the write,
// and the late Unlock is refused and ends nothing.
func TestRecorderLostLease(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	rec := NewRecorder()
	a, b := c.RWMutex("history:lost"), c.RWMutex("history:lost")
	la, err := rec.Acquire(ctx, a, fairrw.Write, false, fairrw.WithLease(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-la.Done()
	// The recorder sees Done close on a goroutine of its own: wait for its
	// Lost op, so that the ops below come in the order the test checks.
	for !hasKind(rec.Ops(), Lost) {
		time.Sleep(time.Millisecond)
	}
	lb, err := rec.Acquire(ctx, b, fairrw.Write, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Release(ctx, la); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("unlock of a lost lease: %v, want ErrNotHeld", err)
	}
	if err := rec.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	Verify(t, rec)

	ops, holds := rec.Ops(), rec.Holds()
	kinds := []Kind{Acquire, Lost, Acquire, Release, Release}
	outcomes := []Outcome{OK, OK, OK, Refused, OK}
	if len(ops) != len(kinds) {
		t.Fatalf("ops %v, want kinds %v", ops, kinds)
	}
	for i, op := range ops {
		if op.Kind != kinds[i] || op.Outcome != outcomes[i] {
			t.Errorf("op %d: %s %s, want %s %s", i, op.Kind, op.Outcome, kinds[i], outcomes[i])
		}
	}
	if ops[1].Lease != ops[0].Lease || ops[3].Lease != ops[0].Lease {
		t.Errorf("lease ids %d, %d, %d: want the acquire's", ops[0].Lease, ops[1].Lease, ops[3].Lease)
	}
	if h := holds[0]; h.To.After(ops[0].Deadline) || !h.To.Equal(ops[1].Call) || !h.To.After(h.From) {
		t.Errorf("lost hold %v: want it to end at the Lost op (%v), by the deadline %v", h, ops[1].Call, ops[0].Deadline)
	}
	if h := holds[1]; !h.To.Equal(ops[4].Call) {
		t.Errorf("hold %v: want it to end at its Unlock call %v", h, ops[4].Call)
	}
	if holds[1].Token <= holds[0].Token {
		t.Errorf("tokens %d then %d: want them to increase", holds[0].Token, holds[1].Token)
	}
}

// TestRecorderEnd: a hold still open when the history ends ends then, and
// End stops the lease watches (goleak checks it).
func TestRecorderEnd(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	rec := NewRecorder()
	l, err := rec.Acquire(ctx, c.RWMutex("history:end"), fairrw.Read, true)
	if err != nil {
		t.Fatal(err)
	}
	rec.End()
	rec.End()
	if h := rec.Holds()[0]; !h.To.After(h.From) {
		t.Errorf("open hold %v: want it to end at End", h)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func hasKind(ops []Op, k Kind) bool {
	for _, op := range ops {
		if op.Kind == k {
			return true
		}
	}
	return false
}
