package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
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

// kind is the class's kind of request.
func (c *workerClass) kind() fairness.Class {
	if c.mode == fairrw.Read {
		return fairness.Reader
	}
	return fairness.Writer
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
	var runs []loopRecord
	b.ResetTimer()
	for range b.N {
		lp := &fairness.Loop{Window: window, Rec: new(fairness.Recorder), OnGrant: check.onGrant}
		start, err := lp.Run(context.Background(), workers)
		if err != nil {
			b.Fatalf("run: %v", err)
		}
		runs = append(runs, loopRecord{start: start, rec: lp.Rec})
	}
	b.StopTimer()
	after := e.sampleServer(b)
	check.verify(b)
	b.ReportMetric(float64(after.scripts-before.scripts)/float64(check.holds.Load()), "scripts/grant")
	span := window.Seconds() * float64(b.N)
	total := 0
	for i := range s.classes {
		st := summarize(&s.classes[i], runs, window)
		st.report(b, float64(b.N), span)
		total += st.inWindow
	}
	b.ReportMetric(float64(total)/span, "grants/s")
}

// loopRecord is what one closed-loop run recorded, and when it started.
type loopRecord struct {
	start time.Time
	rec   *fairness.Recorder
}

// newLoopWorkers builds every class's Clients (closed by b's cleanup) and
// workers on the lock name.
func newLoopWorkers(b *testing.B, opt rueidis.ClientOption, p fairrw.Policy, name string, classes []workerClass) []*fairness.Worker {
	b.Helper()
	var workers []*fairness.Worker
	for i := range classes {
		class := &classes[i]
		clients := make([]*fairrw.Client, class.clients)
		for j := range clients {
			clients[j] = newClient(b, opt, fairrw.WithPolicy(p))
			warmUp(b, clients[j].RWMutex(name))
		}
		for j := range class.workers {
			workers = append(workers, &fairness.Worker{
				Class: class.kind(), Index: j, Mutex: fairness.RW(clients[j%len(clients)].RWMutex(name)),
				Hold: class.hold, Think: fairness.UniformThink(class.thinkMin, class.thinkMax),
			})
		}
	}
	return workers
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

func summarize(class *workerClass, runs []loopRecord, window time.Duration) classStats {
	st := classStats{label: class.label, paths: make(wakePaths), perWorker: make([]int, class.workers)}
	for _, run := range runs {
		for _, q := range run.rec.Requests(class.kind()) {
			st.waits = append(st.waits, q.Wait)
			granted, ok := q.Granted()
			if !ok {
				st.timeouts++
				continue
			}
			if granted.Sub(run.start) < window {
				st.perWorker[q.Client]++
				st.inWindow++
			}
			st.grants++
			st.paths[q.Woken]++
		}
	}
	slices.Sort(st.waits)
	return st
}

// report adds the class's figures, per run (grants, timeouts) or per second
// of window (grants/s), and logs its wake-up paths and per-worker grants.
func (st *classStats) report(b *testing.B, runs, span float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, p := range []float64{50, 90, 99} {
		b.ReportMetric(ms(fairness.Percentile(st.waits, p)), fmt.Sprintf("%s-p%g-ms", st.label, p))
	}
	b.ReportMetric(ms(fairness.Percentile(st.waits, 100)), st.label+"-max-ms")
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
