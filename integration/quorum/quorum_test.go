package quorum

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
)

// quorumSizes are the node counts every quorum test runs on: 3 nodes
// survive the loss of one, 5 the loss of two.
var quorumSizes = []int{3, 5}

// span returns the indexes from..to-1.
func span(from, to int) []int {
	var idx []int
	for i := from; i < to; i++ {
		idx = append(idx, i)
	}
	return idx
}

// quorumLock takes m in mode, waiting, and reports how long it took.
func quorumLock(ctx context.Context, m *fairrw.QuorumRWMutex, mode fairrw.Mode) (*fairrw.Lease, time.Duration, error) {
	start := time.Now()
	var l *fairrw.Lease
	var err error
	if mode == fairrw.Write {
		l, err = m.Lock(ctx)
	} else {
		l, err = m.RLock(ctx)
	}
	return l, time.Since(start), err
}

// TestQuorumGrantWithMinorityDown: with up to (n-1)/2 nodes killed, writes
// and reads are granted by the nodes left (Nodes counts them), Unlock
// succeeds, and nothing stays on the live nodes. An acquire costs at most
// one node timeout: the dead nodes count as refusing once it passes.
func TestQuorumGrantWithMinorityDown(t *testing.T) {
	const nodeTimeout = 200 * time.Millisecond
	for _, n := range quorumSizes {
		for down := 1; down <= (n-1)/2; down++ {
			t.Run(fmt.Sprintf("nodes=%d/down=%d", n, down), func(t *testing.T) {
				ctl := lateness.Start(t)
				qn := itest.StartQuorumNodes(t, n)
				q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(nodeTimeout)},
					fairrw.WithPolicy(fairrw.WriterPreferring()), fairrw.WithLeaseTime(5*time.Second))
				ctx := itest.TestCtx(t)
				qn.Kill(t, span(0, down)...)
				m := q.RWMutex("quorum:minority")
				for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
					l, took, err := quorumLock(ctx, m, mode)
					if err != nil {
						t.Fatalf("%s with %d of %d nodes down: %v", mode, down, n, err)
					}
					t.Logf("%s granted on %d of %d nodes in %v (token %d)", mode, hidden.LeaseNodes(l), n, took.Round(time.Millisecond), l.Token())
					if hidden.LeaseNodes(l) != n-down {
						t.Errorf("%s held on %d nodes, want %d", mode, hidden.LeaseNodes(l), n-down)
					}
					ctl.Within(fmt.Sprintf("%s with %d nodes down (the node timeout %v and a second)", mode, down, nodeTimeout), took, nodeTimeout+time.Second)
					if err := l.Unlock(ctx); err != nil {
						t.Fatalf("Unlock of %s: %v", mode, err)
					}
				}
				l, err := m.TryLock(ctx)
				if err != nil {
					t.Fatalf("TryLock with %d of %d nodes down: %v", down, n, err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				closing := time.Now()
				if err := q.Close(); err != nil {
					t.Fatal(err)
				}
				t.Logf("Close waited %v for the attempts on the dead nodes", time.Since(closing).Round(time.Millisecond))
				qn.ExpectNoLockKeys(t, span(down, n)...)
			})
		}
	}
}

// TestQuorumNoGrantWithMajorityDown: with a majority of nodes killed,
// TryLock and TryRLock are refused, Lock ends with its ctx, and the holds
// the live nodes granted meanwhile were all given back.
func TestQuorumNoGrantWithMajorityDown(t *testing.T) {
	for _, n := range quorumSizes {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			ctl := lateness.Start(t)
			qn := itest.StartQuorumNodes(t, n)
			q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(100 * time.Millisecond)},
				fairrw.WithPolicy(fairrw.Redisson()), fairrw.WithLeaseTime(5*time.Second))
			ctx := itest.TestCtx(t)
			down := n/2 + 1
			qn.Kill(t, span(0, down)...)
			m := q.RWMutex("quorum:majority")
			if l, err := m.TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryLock with %d of %d nodes down: %v, %v; want ErrNotAcquired", down, n, l, err)
			}
			if l, err := m.TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryRLock with %d of %d nodes down: %v, %v; want ErrNotAcquired", down, n, l, err)
			}
			for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
				short, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
				l, took, err := quorumLock(short, m, mode)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s with %d of %d nodes down: %v, %v; want DeadlineExceeded", mode, down, n, l, err)
				}
				ctl.Within(fmt.Sprintf("%s with a 600ms ctx", mode), took, 2*time.Second)
			}
			if err := q.Close(); err != nil { // waits for the late give-backs
				t.Fatal(err)
			}
			qn.ExpectNoLockKeys(t, span(down, n)...)
		})
	}
}

// TestQuorumLeaseThroughNodeLoss: a watchdog lease survives the loss
// (SIGKILL) of up to (n-1)/2 nodes for several renewal intervals, renewed
// on the nodes left, and is reported lost (Done, ErrLeaseLost) within about
// a lease once a majority is gone; its holds on the live node are then
// given back.
func TestQuorumLeaseThroughNodeLoss(t *testing.T) {
	const lease = time.Second // renewed every 333ms
	for _, n := range quorumSizes {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			qn := itest.StartQuorumNodes(t, n)
			q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(100 * time.Millisecond)},
				fairrw.WithPolicy(fairrw.PhaseFair()), fairrw.WithLeaseTime(lease))
			ctx := itest.TestCtx(t)
			l, err := q.RWMutex("quorum:loss").Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			minority := (n - 1) / 2
			qn.Kill(t, span(0, minority)...)
			first := l.Deadline()
			select {
			case <-l.Done():
				t.Fatalf("lost with %d of %d nodes alive: %v", n-minority, n, l.Err())
			case <-time.After(5 * lease / 2):
			}
			if got := hidden.LeaseNodes(l); got != n-minority {
				t.Errorf("held on %d nodes after %d died, want %d", got, minority, n-minority)
			}
			if d := l.Deadline(); !d.After(first) {
				t.Errorf("deadline %v not moved on from %v: no renewal confirmed on a majority", d, first)
			}
			if l.Err() != nil {
				t.Fatalf("Err = %v while held", l.Err())
			}

			killed := time.Now()
			qn.Kill(t, minority)
			select {
			case <-l.Done():
				t.Logf("lost %v after the majority went: %v", time.Since(killed).Round(time.Millisecond), l.Err())
			case <-time.After(lease + 500*time.Millisecond):
				t.Fatalf("not reported lost within %v of losing the majority (held on %d nodes)", lease+500*time.Millisecond, hidden.LeaseNodes(l))
			}
			if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("Err = %v, want ErrLeaseLost", l.Err())
			}
			if err := l.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
				t.Fatalf("Unlock of a lost lease: %v, want ErrNotHeld", err)
			}
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			qn.ExpectNoLockKeys(t, span(minority+1, n)...)
		})
	}
}

// TestQuorumLeaseThroughPausedNode: a node frozen (SIGSTOP) while a lease
// is held costs the lease nothing while the others hold a majority; a
// second frozen node of three ends it. After they resume, a new grant
// works and nothing of the old lease stays behind.
func TestQuorumLeaseThroughPausedNode(t *testing.T) {
	const lease = time.Second
	qn := itest.StartQuorumNodes(t, 3)
	q := qn.Quorum(t, itest.Transports[0], []fairrw.QuorumOption{fairrw.WithNodeTimeout(100 * time.Millisecond)},
		fairrw.WithPolicy(fairrw.Redisson()), fairrw.WithLeaseTime(lease))
	ctx := itest.TestCtx(t)
	m := q.RWMutex("quorum:paused")
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qn.Servers[0].Pause(t)
	select {
	case <-l.Done():
		t.Fatalf("lost with one node of three paused: %v", l.Err())
	case <-time.After(5 * lease / 2):
	}
	if got := hidden.LeaseNodes(l); got != 2 {
		t.Errorf("held on %d nodes with one paused past its lease, want 2", got)
	}
	// An acquire meanwhile: the paused node never answers, so the round
	// waits out the node timeout.
	other := q.RWMutex("quorum:paused:other")
	ol, took, err := quorumLock(ctx, other, fairrw.Write)
	if err != nil {
		t.Fatalf("Lock of another name with one node paused: %v", err)
	}
	t.Logf("another name granted in %v with one node of three paused", took.Round(time.Millisecond))
	unlockStart := time.Now()
	if err := ol.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("its Unlock took %v", time.Since(unlockStart).Round(time.Millisecond))

	paused := time.Now()
	qn.Servers[1].Pause(t)
	select {
	case <-l.Done():
		t.Logf("lost %v after the second pause: %v", time.Since(paused).Round(time.Millisecond), l.Err())
	case <-time.After(lease + 500*time.Millisecond):
		t.Fatalf("not reported lost within %v with two of three nodes paused", lease+500*time.Millisecond)
	}
	if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", l.Err())
	}
	qn.Servers[0].Resume(t)
	qn.Servers[1].Resume(t)
	l2, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the nodes resumed: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("token %d after the lost lease's %d", l2.Token(), l.Token())
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	// The paused nodes' holds expired there (Redis's clock went on).
	qn.ExpectNoLockKeys(t, 0, 1, 2)
}
