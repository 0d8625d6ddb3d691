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
)

// TestQuorumExclusionAcrossProcesses: two processes' worth of quorums (each
// its own Clients on the same nodes) lock one name under every policy: a
// write excludes the other process's writes and reads, a waiting Lock is
// granted once the write is unlocked, readers of both share, and a read
// excludes the other's write.
func TestQuorumExclusionAcrossProcesses(t *testing.T) {
	for _, n := range quorumSizes {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			qn := itest.StartQuorumNodes(t, n)
			for i, p := range itest.Policies {
				t.Run(p.String(), func(t *testing.T) {
					opts := []fairrw.Option{fairrw.WithPolicy(p), fairrw.WithLeaseTime(5 * time.Second)}
					qopts := []fairrw.QuorumOption{fairrw.WithNodeTimeout(200 * time.Millisecond)}
					// The two processes talk to Redis differently, as two
					// deployments of a service might.
					a := qn.Quorum(t, itest.Transports[i%len(itest.Transports)], qopts, opts...)
					b := qn.Quorum(t, itest.Transports[(i+1)%len(itest.Transports)], qopts, opts...)
					checkQuorumExclusion(t, a, b, "quorum:excl:"+p.String())
					for _, q := range []*fairrw.Quorum{a, b} {
						if err := q.Close(); err != nil {
							t.Fatal(err)
						}
					}
					qn.ExpectNoLockKeys(t, span(0, n)...)
				})
			}
		})
	}
}

func checkQuorumExclusion(t *testing.T, a, b *fairrw.Quorum, name string) {
	ctx := itest.TestCtx(t)
	ma, mb := a.RWMutex(name), b.RWMutex(name)

	// Write against write and read.
	w, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hidden.LeaseNodes(w) != hidden.QuorumNodes(a) {
		t.Errorf("write held on %d of %d nodes", hidden.LeaseNodes(w), hidden.QuorumNodes(a))
	}
	if l, err := mb.TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("the other process's TryLock under a write: %v, %v; want ErrNotAcquired", l, err)
	}
	if l, err := mb.TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("the other process's TryRLock under a write: %v, %v; want ErrNotAcquired", l, err)
	}
	waiting := make(chan *fairrw.Lease, 1)
	go func() {
		l, err := mb.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		waiting <- l
	}()
	select {
	case l := <-waiting:
		t.Fatalf("the other process's Lock was granted under a write (%v)", l)
	case <-time.After(300 * time.Millisecond):
	}
	unlocked := time.Now()
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w2 := <-waiting
	if w2 == nil {
		t.FailNow()
	}
	t.Logf("the waiting write was granted %v after the Unlock call", time.Since(unlocked).Round(time.Millisecond))
	if w2.Token() <= w.Token() {
		t.Errorf("second write token %d not above the first's %d", w2.Token(), w.Token())
	}
	if l, err := ma.TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("TryRLock under the other process's write: %v, %v; want ErrNotAcquired", l, err)
	}
	if err := w2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Readers share; a read excludes the other's write.
	ra, err := ma.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := mb.TryRLock(ctx)
	if err != nil {
		t.Fatalf("the other process's TryRLock beside a read: %v", err)
	}
	// A read gets the last write token while Redis keeps it, else 0.
	if below := func(tok uint64) bool { return tok != 0 && tok < w2.Token() }; below(ra.Token()) || below(rb.Token()) {
		t.Errorf("read tokens %d and %d below the last write's %d", ra.Token(), rb.Token(), w2.Token())
	}
	if err := ra.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := ma.TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("TryLock under the other process's read: %v, %v; want ErrNotAcquired", l, err)
	}
	if err := rb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w3, err := ma.Lock(short)
	if err != nil {
		t.Fatalf("Lock once every read was unlocked: %v", err)
	}
	if err := w3.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
