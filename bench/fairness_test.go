package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/fairness"
)

// floodSecondsEnv overrides the window of one closed-loop run (seconds).
const floodSecondsEnv = "FAIRRW_BENCH_FLOOD_SECONDS"

// defaultFloodWindow is the window of one closed-loop run: one op of
// ReaderFlood and WriterStream.
const defaultFloodWindow = 3 * time.Second

// policyCase is a policy under the name the benchmarks give it.
type policyCase struct {
	name   string
	policy fairrw.Policy
}

var policyCases = []policyCase{
	{"redisson", fairrw.Redisson()},
	{"writer-preferring", fairrw.WriterPreferring()},
	{"phase-fair", fairrw.PhaseFair()},
}

// workerClass is one class of closed-loop workers on a lock: each worker has
// its own handle, the handles are spread round-robin over the class's own
// Clients, and each loops acquire, hold, release, think.
type workerClass struct {
	label    string // "reader" or "writer": the prefix of the class's metrics
	mode     fairrw.Mode
	workers  int
	clients  int
	hold     time.Duration
	thinkMin time.Duration
	thinkMax time.Duration
}

// think draws a think time, uniform in [thinkMin, thinkMax].
func (c *workerClass) think() time.Duration {
	return c.thinkMin + rand.N(c.thinkMax-c.thinkMin+1)
}

// scenario is a closed-loop workload whose classes share one lock name.
type scenario struct {
	name    string
	classes []workerClass
}

var (
	// readerFlood: readers overlap all the time (each holds 20ms and comes
	// back within 2ms), one writer comes every 20ms after its release.
	readerFlood = scenario{name: "reader-flood", classes: []workerClass{
		{label: "reader", mode: fairrw.Read, workers: 6, clients: 2, hold: 20 * time.Millisecond, thinkMax: 2 * time.Millisecond},
		{label: "writer", mode: fairrw.Write, workers: 1, clients: 1, hold: 5 * time.Millisecond, thinkMin: 20 * time.Millisecond, thinkMax: 20 * time.Millisecond},
	}}
	// writerStream: three writers keep a write waiting almost all the time;
	// four readers come every 10ms after their release.
	writerStream = scenario{name: "writer-stream", classes: []workerClass{
		{label: "reader", mode: fairrw.Read, workers: 4, clients: 2, hold: 5 * time.Millisecond, thinkMin: 10 * time.Millisecond, thinkMax: 10 * time.Millisecond},
		{label: "writer", mode: fairrw.Write, workers: 3, clients: 1, hold: 10 * time.Millisecond, thinkMax: time.Millisecond},
	}}
)

// BenchmarkReaderFlood: 6 overlapping readers and 1 writer on one lock name,
// per policy. One op is one closed-loop run of the window (3s, or
// FAIRRW_BENCH_FLOOD_SECONDS): run it with -benchtime 1x -count N.
func BenchmarkReaderFlood(b *testing.B) { benchScenario(b, readerFlood) }

// BenchmarkWriterStream: 3 writers in a stream and 4 readers on one lock
// name, per policy, run like BenchmarkReaderFlood.
func BenchmarkWriterStream(b *testing.B) { benchScenario(b, writerStream) }

func benchScenario(b *testing.B, s scenario) {
	window := floodWindow(b)
	e := newEnv(b)
	for _, pc := range policyCases {
		b.Run("policy="+pc.name, func(b *testing.B) {
			runScenario(b, e, s, pc, window)
		})
	}
}

// floodWindow reads FAIRRW_BENCH_FLOOD_SECONDS.
func floodWindow(b *testing.B) time.Duration {
	b.Helper()
	v := os.Getenv(floodSecondsEnv)
	if v == "" {
		return defaultFloodWindow
	}
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil || sec <= 0 {
		b.Fatalf("%s=%q: want a positive number of seconds", floodSecondsEnv, v)
	}
	return time.Duration(sec * float64(time.Second))
}

func runScenario(b *testing.B, e *env, s scenario, pc policyCase, window time.Duration) {
	e.checkLeftovers(b)
	workers := newLoopWorkers(b, e.option(0, false), pc.policy, e.name(s.name, pc.name), s.classes)
	check := new(holdCheck)
	before := e.sampleServer(b)
	b.ResetTimer()
	for range b.N {
		r := &loopRun{window: window, check: check}
		if err := r.run(workers); err != nil {
			b.Fatalf("run: %v", err)
		}
	}
	b.StopTimer()
	after := e.sampleServer(b)
	check.verify(b)
	b.ReportMetric(float64(after.scripts-before.scripts)/float64(check.holds.Load()), "scripts/grant")
	span := window.Seconds() * float64(b.N)
	total := 0
	for i := range s.classes {
		st := summarize(&s.classes[i], workers, window)
		st.report(b, float64(b.N), span)
		total += st.inWindow
	}
	b.ReportMetric(float64(total)/span, "grants/s")
}

// loopWorker is one closed-loop worker and the requests it recorded, over
// every run of its benchmark.
type loopWorker struct {
	class     *workerClass
	m         *fairrw.RWMutex
	recording bool // its requests are samples of the current run
	requests  []request
}

// request is one recorded acquire.
type request struct {
	wait     time.Duration // granted minus asked; the window for a timed-out request
	granted  time.Duration // grant time since the run's start
	timedOut bool
	woken    string // Lease.WokenBy
}

// newLoopWorkers builds every class's Clients (closed by b's cleanup) and
// workers on the lock name.
func newLoopWorkers(b *testing.B, opt rueidis.ClientOption, p fairrw.Policy, name string, classes []workerClass) []*loopWorker {
	b.Helper()
	var workers []*loopWorker
	for i := range classes {
		class := &classes[i]
		clients := make([]*fairrw.Client, class.clients)
		for j := range clients {
			clients[j] = newClient(b, opt, fairrw.WithPolicy(p))
			warmUp(b, clients[j].RWMutex(name))
		}
		for j := range class.workers {
			workers = append(workers, &loopWorker{class: class, m: clients[j%len(clients)].RWMutex(name)})
		}
	}
	return workers
}

// loopRun is one closed-loop run. Requests asked within the window are
// recorded, each bounded by a context of the window's length: a request
// still waiting then is recorded as timed out, at the window. The workers
// keep looping past the window, unrecorded, so that every recorded request
// waits under the same load until it ends; the run stops (cancelling the
// unrecorded requests) once every worker has asked past the window.
type loopRun struct {
	window  time.Duration
	check   *holdCheck
	start   time.Time
	stop    context.Context
	pending sync.WaitGroup // workers still recording
}

func (r *loopRun) run(workers []*loopWorker) error {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.stop = stop
	r.pending.Add(len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	r.start = time.Now()
	for i, w := range workers {
		w.recording = true
		wg.Go(func() {
			if errs[i] = r.work(w); errs[i] != nil {
				cancel()
			}
		})
	}
	r.pending.Wait()
	cancel()
	wg.Wait()
	return errors.Join(errs...)
}

func (r *loopRun) work(w *loopWorker) error {
	defer r.stopRecording(w)
	for r.stop.Err() == nil {
		l, err := r.ask(w)
		if err != nil {
			return err
		}
		if l != nil {
			if err := r.hold(w, l); err != nil {
				return err
			}
		}
		pause(r.stop, w.class.think())
	}
	return nil
}

func (r *loopRun) stopRecording(w *loopWorker) {
	if w.recording {
		w.recording = false
		r.pending.Done()
	}
}

// ask makes one request and records it if it was asked within the window.
// It returns a nil Lease for a request that timed out or that the run's end
// cancelled.
func (r *loopRun) ask(w *loopWorker) (*fairrw.Lease, error) {
	asked := time.Now()
	if asked.Sub(r.start) >= r.window {
		r.stopRecording(w)
	}
	record := w.recording
	ctx, cancel := r.stop, context.CancelFunc(func() {})
	if record {
		ctx, cancel = context.WithTimeout(r.stop, r.window)
	}
	defer cancel()
	l, err := acquire(ctx, w.m, w.class.mode)
	wait := time.Since(asked)
	switch {
	case err == nil:
		if record {
			w.requests = append(w.requests, request{wait: wait, granted: asked.Add(wait).Sub(r.start), woken: l.WokenBy()})
		}
		return l, nil
	case r.stop.Err() != nil: // the run ended, or another worker failed
		return nil, nil
	case record && errors.Is(err, context.DeadlineExceeded):
		w.requests = append(w.requests, request{wait: r.window, timedOut: true})
		return nil, nil
	}
	return nil, fmt.Errorf("%s %s: %w", w.class.label, w.m.Owner(), err)
}

// hold keeps the lease for the class's hold time, checked by r.check, then
// unlocks it.
func (r *loopRun) hold(w *loopWorker, l *fairrw.Lease) error {
	r.check.enter(w.class.mode, l.Token())
	time.Sleep(w.class.hold)
	r.check.exit(w.class.mode)
	if err := l.Unlock(context.Background()); err != nil {
		return fmt.Errorf("%s %s unlock: %w", w.class.label, w.m.Owner(), err)
	}
	return nil
}

// pause sleeps for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// classStats are one class's recorded requests over every run.
type classStats struct {
	label     string
	waits     []time.Duration // sorted; timed-out requests at the window
	grants    int
	timeouts  int
	inWindow  int   // grants that happened within the window
	perWorker []int // inWindow per worker
	paths     wakePaths
}

func summarize(class *workerClass, workers []*loopWorker, window time.Duration) classStats {
	st := classStats{label: class.label, paths: make(wakePaths)}
	for _, w := range workers {
		if w.class != class {
			continue
		}
		n := 0
		for _, q := range w.requests {
			st.waits = append(st.waits, q.wait)
			switch {
			case q.timedOut:
				st.timeouts++
				continue
			case q.granted < window:
				n++
			}
			st.grants++
			st.paths[q.woken]++
		}
		st.inWindow += n
		st.perWorker = append(st.perWorker, n)
	}
	slices.Sort(st.waits)
	return st
}

// report adds the class's figures, per run (grants, timeouts) or per second
// of window (grants/s), and logs its wake-up paths and per-worker grants.
func (st *classStats) report(b *testing.B, runs, span float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, p := range []float64{50, 90, 99} {
		b.ReportMetric(ms(percentile(st.waits, p)), fmt.Sprintf("%s-p%g-ms", st.label, p))
	}
	b.ReportMetric(ms(percentile(st.waits, 100)), st.label+"-max-ms")
	b.ReportMetric(float64(st.grants)/runs, st.label+"-grants")
	b.ReportMetric(float64(st.timeouts)/runs, st.label+"-timeouts")
	b.ReportMetric(float64(st.inWindow)/span, st.label+"-grants/s")
	if len(st.perWorker) > 1 {
		b.ReportMetric(fairness.Jain(st.perWorker), st.label+"-jain")
	}
	lo, hi := slices.Min(st.perWorker), slices.Max(st.perWorker)
	uneven := ""
	if hi > 2*lo {
		uneven = " (uneven: max > 2 x min)"
	}
	b.Logf("%s: %d requests, %d granted, %d timed out; grants per worker in the window %v%s; woken by %v",
		st.label, len(st.waits), st.grants, st.timeouts, st.perWorker, uneven, st.paths)
}
