package cohort

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// yieldCohortYield is fairrw's cohortYield: the most holds a cohort passes
// on once a writer outside it is known, or not known not, to wait.
const yieldCohortYield = 2

// yieldStream is a writer stream on one Client's cohort: goroutines that
// Lock, hold for hold and Unlock in a loop. It counts the holds granted
// and checks exclusion with the writes of everyone else (inside).
type yieldStream struct {
	mu      sync.Mutex
	granted []time.Time // when each hold of the stream was granted
	inside  atomic.Int32
	failed  chan error
	wg      sync.WaitGroup
	cancel  context.CancelFunc
}

// startYieldStream starts n goroutines on m's cohort.
func startYieldStream(ctx context.Context, m *fairrw.RWMutex, n int, hold time.Duration) *yieldStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &yieldStream{failed: make(chan error, n+1), cancel: cancel}
	for range n {
		s.wg.Go(func() {
			for ctx.Err() == nil {
				l, err := m.Lock(ctx)
				if err != nil {
					if ctx.Err() == nil {
						s.failed <- err
					}
					return
				}
				now := time.Now()
				if s.inside.Add(1) != 1 {
					s.failed <- errors.New("two write holders at once")
				}
				s.mu.Lock()
				s.granted = append(s.granted, now)
				s.mu.Unlock()
				time.Sleep(hold)
				s.inside.Add(-1)
				if err := l.Unlock(context.Background()); err != nil {
					s.failed <- fmt.Errorf("unlock in the stream: %w", err)
					return
				}
			}
		})
	}
	return s
}

// grantedIn counts the stream's holds granted in (from, to).
func (s *yieldStream) grantedIn(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.granted {
		if g.After(from) && g.Before(to) {
			n++
		}
	}
	return n
}

// stop ends the stream and reports what failed in it.
func (s *yieldStream) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	s.wg.Wait()
	close(s.failed)
	for err := range s.failed {
		t.Error(err)
	}
}

// seenWaiting polls Inspect until owner (by its Client's id prefix) is
// among the lock's waiting writers (or, reader, its waiting readers), or
// done has its outcome; it returns when it was seen (zero: not seen).
func seenWaiting(t *testing.T, ctx context.Context, c *fairrw.Client, name, prefix string, reader bool, done <-chan itest.AdvResult) (time.Time, itest.AdvResult, bool) {
	t.Helper()
	for {
		select {
		case res := <-done:
			return time.Time{}, res, true
		default:
		}
		info, err := c.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		waiting := info.WaitingWriters
		if reader {
			waiting = info.WaitingReaders
		}
		for _, w := range waiting {
			if strings.HasPrefix(w.Owner, prefix) {
				return time.Now(), itest.AdvResult{}, false
			}
		}
	}
}

// clientPrefix returns the "<uuid>:" that starts every owner of c.
func clientPrefix(t *testing.T, ctx context.Context, c *fairrw.Client, name string) string {
	t.Helper()
	l, err := c.RWMutex(name).TryLock(ctx, fairrw.WithLease(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Unlock(ctx) }()
	return l.Owner()[:strings.LastIndexByte(l.Owner(), ':')+1]
}

// TestCohortYieldsWithinTwoHolds: while one Client's cohort streams writes
// (4 goroutines, 2ms holds), a writer of another Client, once Redis shows
// it queued (the push that tells the cohort's Client is on its way by
// then), waits for at most cohortYield+1 holds of the stream granted after
// that, plus the machine's worst lateness during the wait (the cohort's leader may have queued just before it: its grant,
// then cohortYield passes), not the 16 of a run of the old bound; it never
// overlaps a hold of the stream, and its token is above every token
// before. Judged over 20 waits per policy; the stream with cohorts off is
// the control that the waits were contended.
func TestCohortYieldsWithinTwoHolds(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			busy := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			watcher := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "cohort-yield2:" + p.String()
			prefix := clientPrefix(t, ctx, other, name)
			s := startYieldStream(ctx, busy.RWMutex(name), 4, 2*time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			judged, worst, contended := 0, 0, 0
			var last uint64
			for i := range 20 {
				if s.inside.Load() > 0 {
					contended++ // the stream held as it asked
				}
				done := itest.AdvLock(ctx, other.RWMutex(name))
				seen, res, early := seenWaiting(t, ctx, watcher, name, prefix, false, done)
				var late time.Duration
				if !early {
					late = locktest.MachineStall(func() {
						res = itest.AdvRecv(t, done, 10*time.Second, fmt.Sprintf("wait %d", i))
					})
				}
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if s.inside.Add(1) != 1 {
					t.Error("the other Client's writer overlaps a hold of the stream")
				}
				if res.L.Token() <= last {
					t.Errorf("wait %d: token %d not above an earlier grant's %d", i, res.L.Token(), last)
				}
				last = res.L.Token()
				if !seen.IsZero() {
					judged++
					// A hold recorded as granted within the machine's
					// lateness after seen may have been passed before the
					// push reached the busy Client, or recorded late: only
					// later ones count (idle, about a millisecond).
					n := s.grantedIn(seen.Add(late), res.At)
					worst = max(worst, n)
					if n > yieldCohortYield+1 {
						t.Errorf("wait %d: %d holds of the busy cohort granted more than the machine's lateness (%v) after the writer was seen queued, want at most %d", i, n, late, yieldCohortYield+1)
					}
				}
				time.Sleep(time.Millisecond)
				s.inside.Add(-1)
				if err := res.L.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				// The stream's holds carry tokens above this one.
				time.Sleep(5 * time.Millisecond)
			}
			s.stop(t)
			t.Logf("%d of 20 waits judged, %d asked while the stream held; worst %d holds of the stream after the writer was seen queued", judged, contended, worst)
			if judged < 10 || contended < 10 {
				t.Errorf("only %d waits seen queued, %d asked while the stream held: the bound went unchecked", judged, contended)
			}
			itest.NoKeysLeftBut(t, r, name, "fairrw_attempt:")
		})
	}
}

// TestCohortPhaseFairReaderEndsRun: under PhaseFair, a reader that waits
// while a Client's cohort streams writes ends the run: once the reader is
// known (one of this Client's: as its RLock begins; another Client's: once
// Redis shows it waiting, the push being on its way), at most one hold of
// the stream is granted before the reader (the one whose pass raced the
// news), and none while it reads. With cohorts on, a stream of 2ms holds
// would otherwise have kept it out for up to 63 passes.
func TestCohortPhaseFairReaderEndsRun(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "same-client", false: "other-client"}[local], func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			p := fairrw.WithPolicy(fairrw.PhaseFair())
			busy := itest.NewClient(t, r, itest.Transports[0], p)
			readerClient := itest.NewClient(t, r, itest.Transports[0], p)
			if local {
				readerClient = busy
			}
			watcher := itest.NewClient(t, r, itest.Transports[0], p)
			name := "cohort-pf-reader"
			prefix := clientPrefix(t, ctx, readerClient, name)
			s := startYieldStream(ctx, busy.RWMutex(name), 4, 2*time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			judged, worst, behind, reads := 0, 0, 0, 0
			// 20 reads, and more (up to 60) until 10 were asked while the
			// stream held and 10 judged: a loaded machine runs the stream
			// less often between reads.
			for i := 0; i < 20 || ((judged < 10 || behind < 10) && i < 60); i++ {
				reads++
				call := time.Now()
				if s.inside.Load() > 0 {
					behind++ // the stream held as it asked
				}
				done := make(chan itest.AdvResult, 1)
				go func() {
					l, err := readerClient.RWMutex(name).RLock(ctx)
					done <- itest.AdvResult{L: l, Err: err, At: time.Now()}
				}()
				known := call
				var res itest.AdvResult
				if !local {
					seen, got, early := seenWaiting(t, ctx, watcher, name, prefix, true, done)
					known, res = seen, got
					if early {
						known = time.Time{}
					}
				}
				var late time.Duration
				if res.L == nil && res.Err == nil {
					late = locktest.MachineStall(func() {
						res = itest.AdvRecv(t, done, 10*time.Second, fmt.Sprintf("read %d", i))
					})
				}
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if s.inside.Load() != 0 {
					t.Error("a read granted while a write of the stream holds")
				}
				if !known.IsZero() {
					judged++
					// As in TestCohortYieldsWithinTwoHolds: from known plus
					// the machine's lateness during the wait.
					n := s.grantedIn(known.Add(late), res.At)
					worst = max(worst, n)
					if n > 1 {
						t.Errorf("read %d: %d holds of the stream granted more than the machine's lateness (%v) after the reader was known to wait, want at most 1", i, n, late)
					}
				}
				time.Sleep(3 * time.Millisecond)
				if during := s.grantedIn(res.At, time.Now()); during > 0 {
					t.Errorf("read %d: %d writes of the stream granted while it read", i, during)
				}
				if err := res.L.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			s.stop(t)
			t.Logf("%d of %d reads judged, %d asked while the stream held; worst %d holds of the stream after the reader was known", judged, reads, behind, worst)
			if judged < 10 || behind < 10 {
				t.Errorf("only %d reads judged, %d asked while the stream held: the promise went unchecked", judged, behind)
			}
		})
	}
}

// TestCohortRunLengths: how long a cohort's runs get (holds under one
// owner in a row, passes after one grant in Redis) with 4 goroutines of
// one Client streaming writes and nobody else on the name. With client
// tracking the Client knows nobody waits, and a run goes on for the tokens
// its grant reserved (up to 64 holds). Without it (a connection that does
// not track) it never knows: a WriterPreferring run passes at most
// cohortYield times, a PhaseFair one none (a reader may always be
// waiting).
func TestCohortRunLengths(t *testing.T) {
	for _, tr := range []itest.Transport{itest.Transports[0], itest.Transports[1]} {
		for _, p := range itest.CohortPolicies {
			t.Run(tr.Name+"/"+p.String(), func(t *testing.T) {
				r := redistest.Start(t)
				ctx := itest.TestCtx(t)
				c := itest.NewClient(t, r, tr, fairrw.WithPolicy(p))
				m := c.RWMutex("run-lengths")
				var (
					mu      sync.Mutex
					owners  []string
					wg      sync.WaitGroup
					failed  = make(chan error, 4)
					stopped = time.Now().Add(500 * time.Millisecond)
				)
				for range 4 {
					wg.Go(func() {
						for time.Now().Before(stopped) {
							l, err := m.Lock(ctx)
							if err != nil {
								failed <- err
								return
							}
							mu.Lock()
							owners = append(owners, l.Owner())
							mu.Unlock()
							time.Sleep(50 * time.Microsecond)
							if err := l.Unlock(ctx); err != nil {
								failed <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(failed)
				for err := range failed {
					t.Fatal(err)
				}
				longest, run := 0, 0
				for i := range owners {
					if i > 0 && owners[i] == owners[i-1] {
						run++
					} else {
						run = 1
					}
					longest = max(longest, run)
				}
				t.Logf("%d holds, longest run %d", len(owners), longest)
				switch {
				case tr.Name == itest.Transports[0].Name && longest <= yieldCohortYield+1:
					t.Errorf("longest run %d with client tracking and nobody else waiting: the runs yielded for nobody", longest)
				case tr.Name == itest.Transports[0].Name && longest > 64:
					t.Errorf("longest run %d: more holds than one grant's tokens", longest)
				case tr.Name != itest.Transports[0].Name && p.String() == fairrw.PhaseFair().String() && longest > 1:
					t.Errorf("longest run %d without client tracking under PhaseFair: passed while a reader may wait", longest)
				case tr.Name != itest.Transports[0].Name && longest > yieldCohortYield+1:
					t.Errorf("longest run %d without client tracking: more than %d passes after a grant", longest, yieldCohortYield)
				}
			})
		}
	}
}
