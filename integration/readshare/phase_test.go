package readshare

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestReadSharePhaseFairPhases: under PhaseFair, reads that could share
// their Client's read hold keep the phases. While a writer of another
// Client waits behind that hold, the Client's new reads do not join it:
// none is granted before the writer, which is granted as soon as the reads
// held when it queued end (the read phase is not extended), and none while
// it writes (the write phase is one hold). When the write ends, every one
// of them enters before the next writer, asked for after the write ended.
// Run with the reads' Client knowing of the writer (Redis shows it queued,
// and the push is given a moment), 5 times.
func TestReadSharePhaseFairPhases(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	p := fairrw.WithPolicy(fairrw.PhaseFair())
	readers := itest.NewClient(t, r, itest.Transports[0], p)
	writers := itest.NewClient(t, r, itest.Transports[0], p)
	watcher := itest.NewClient(t, r, itest.Transports[0], p)
	name := "rs-phases"
	m := readers.RWMutex(name)
	for round := range 5 {
		r1, err := m.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := m.RLock(ctx) // shares r1's hold: no writer waits yet
		if err != nil {
			t.Fatal(err)
		}
		if r2.Owner() != r1.Owner() {
			t.Fatalf("round %d: the second read did not share the first's hold", round)
		}
		w := itest.AdvLock(ctx, writers.RWMutex(name))
		for {
			info, err := watcher.Inspect(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.WaitingWriters) == 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // the push reaches the readers' Client

		type read struct {
			l   *fairrw.Lease
			at  time.Time
			err error
		}
		var mu sync.Mutex
		var reads []read
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				l, err := m.RLock(ctx)
				mu.Lock()
				reads = append(reads, read{l, time.Now(), err})
				mu.Unlock()
			})
		}
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		early := len(reads)
		mu.Unlock()
		if early > 0 {
			t.Errorf("round %d: %d new reads granted while a writer waited behind the shared hold", round, early)
		}
		released := time.Now()
		for _, l := range []*fairrw.Lease{r1, r2} {
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res := itest.AdvRecv(t, w, 10*time.Second, "the writer")
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		t.Logf("round %d: writer granted %v after the reads it found were unlocked", round, res.At.Sub(released).Round(time.Microsecond))
		time.Sleep(20 * time.Millisecond) // its write phase
		writeEnd := time.Now()
		mu.Lock()
		for _, rd := range reads {
			if rd.err == nil && rd.at.Before(writeEnd) {
				t.Errorf("round %d: a read granted at %v, inside the write phase (granted %v, ended %v)", round, rd.at, res.At, writeEnd)
			}
		}
		mu.Unlock()
		if err := res.L.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		// A writer asking now comes after the reads admitted as the write
		// ended: every one of them enters first, and it only once they end.
		next := itest.AdvLock(ctx, writers.RWMutex(name))
		entered := make(chan struct{})
		go func() { wg.Wait(); close(entered) }()
		select {
		case <-entered:
		case res2 := <-next:
			// The policy broke: let the reads in to end the round.
			t.Errorf("round %d: the next writer granted (%v) before the reads admitted at the write's end entered", round, res2.Err)
			if res2.L != nil {
				_ = res2.L.Unlock(ctx)
			}
			<-entered
			next = itest.AdvLock(ctx, writers.RWMutex(name))
		}
		for _, rd := range reads {
			if rd.err != nil {
				t.Fatal(rd.err)
			}
		}
		select {
		case res2 := <-next:
			t.Errorf("round %d: the next writer granted (%v) while the reads admitted at the write's end hold", round, res2.Err)
			if res2.L != nil {
				_ = res2.L.Unlock(ctx)
			}
		default:
			for _, rd := range reads {
				if err := rd.l.Unlock(ctx); err != nil && !strings.Contains(err.Error(), "not held") {
					t.Fatal(err)
				}
			}
			res2 := itest.AdvRecv(t, next, 10*time.Second, "the next writer")
			if res2.Err != nil {
				t.Fatal(res2.Err)
			}
			if err := res2.L.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
}

// TestReadSharePhaseFairNoJoinWhileWriterKnown: the same from the Client's
// own cohort: while one of its writers waits in Redis behind its shared
// read hold (a Lock of the same Client queues in Redis: it is no cohort
// pass), no read of the Client joins that hold.
func TestReadSharePhaseFairNoJoinWhileWriterKnown(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(fairrw.PhaseFair()))
	name := "rs-phases-own"
	m := c.RWMutex(name)
	r1, err := m.RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := itest.AdvLock(ctx, m)
	for {
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.WaitingWriters) == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if l, err := m.RLock(rctx); err == nil {
		_ = l.Unlock(ctx)
		t.Errorf("a read joined (owner %s) the shared hold (owner %s) while a writer of the same Client waited", l.Owner(), r1.Owner())
	}
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	res := itest.AdvRecv(t, w, 10*time.Second, "the writer")
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := res.L.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
}
