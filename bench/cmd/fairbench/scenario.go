package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// kind is how a scenario drives its contenders.
type kind uint8

const (
	closedLoop kind = iota // fairness.Loop workers: acquire, hold, release, think
	handoff                // one holder, one blocked waiter: the release-to-grant time
	renewal                // one process holding many leases: the watchdog's cost
	queueCost              // closed loops of one shape at several queue lengths: cost per grant by length
	serverCost             // tight lock+unlock loops, uncontended and contended: the server's cost per cycle
	arrival                // one client's stream of writes, another client's writer arriving: its wait, in ms and in holds
)

// class is one class of closed-loop workers on a scenario's lock: each
// worker has its own handle (one lock owner), the handles are spread
// round-robin over the class's own clients, and each loops acquire, hold,
// release, think.
type class struct {
	kind     fairness.Class
	workers  int
	clients  int
	hold     time.Duration
	thinkMin time.Duration
	thinkMax time.Duration
	// period > 0 replaces think: after each release the worker waits for
	// the next multiple of period since the run's start, so that the
	// class's workers arrive together (bursts).
	period time.Duration
	// readShare > 0 makes the class mixed: each request is a read with
	// this probability (kind is then the class's label only).
	readShare float64
}

// scenario is one workload, run once per contender that can run it.
type scenario struct {
	name  string
	about string
	kind  kind
	// classes share one lock name, or with distinct, each worker has its
	// own name (no contention at all).
	classes  []class
	distinct bool
	// leases are the fan-outs of a renewal scenario.
	leases []int
	// queues are the runs of a queue-cost scenario, one writer class each
	// on one name, shortest queue first: the same shape with more writers,
	// so that what grows per grant is what the queue's length costs.
	queues []class
	// role is what the verdict reads from the scenario.
	role role
	// exposes is, for a starvation scenario, the class a policy may starve
	// in it: the verdict ranks policies by that class's waits, and the
	// charts show its waits over time.
	exposes fairness.Class
	// label names the scenario in the verdict ("contended, one Client").
	label string
	// oneClient makes a handoff scenario's holder and waiter two handles
	// of one client (a release's waiter in the same process), rather than
	// of two; a closed-loop scenario's classes share one client.
	oneClient bool
	// optional scenarios are left out of the default set, which is meant
	// to take about two minutes; -scenarios or -full runs them.
	optional bool
	// cohorts marks the scenarios where fairrw's cohorts and shared reads
	// change who is granted next: the fair policies with cohorts off
	// (contender.CohortsOff) run beside them there, and only there.
	cohorts bool
}

// role is what the verdict reads from a scenario.
type role uint8

const (
	noRole       role = iota
	starvation        // which policies starve the class the scenario exposes
	throughput        // the policies' grants/s
	fairnessCost      // every contender's grants/s, Jain's index and waits against the fastest peer's
	serverCosts       // Redis CPU and throughput per cycle against the bare script pairs
	yieldBound        // what another Client's writer waits for behind a busy Client, in holds and ms
)

// exclusive reports whether the scenario asks only for write holds, so
// that the peer libraries (exclusive locks only) can run it too.
func (s *scenario) exclusive() bool {
	for _, c := range slices.Concat(s.classes, s.queues) {
		if c.kind != fairness.Writer || c.readShare > 0 {
			return false
		}
	}
	return true
}

// runs reports whether ct takes part in s. The contenders outside
// contender.All (fairrw's Mutex) run in server-cost only: they would
// lengthen the default run, and the fairness scenarios compare the
// read-write policies.
func (s *scenario) runs(ct contender.Contender) bool {
	if extra(ct) && s.kind != serverCost {
		return false
	}
	if cohortsOff(ct) && !s.cohorts {
		return false
	}
	switch s.kind {
	case serverCost:
		return true
	case renewal:
		return ct.Renews
	case handoff, arrival:
		return true
	}
	return ct.Reads || s.exclusive()
}

// mixed returns a scenario of workers that each ask for a read with
// probability share, else a write.
func mixed(share float64) scenario {
	pct := int(share*100 + 0.5)
	return scenario{
		name:  fmt.Sprintf("mixed-%d", pct),
		about: fmt.Sprintf("16 workers on 4 clients, each request a read with probability %d%% (hold 1ms, think 0-2ms)", pct),
		classes: []class{
			{kind: fairness.Reader, workers: 16, clients: 4, hold: time.Millisecond, thinkMax: 2 * time.Millisecond, readShare: share},
		},
		role: throughput,
	}
}

// contendedWriters are the writers of every contended scenario.
const contendedWriters = 8

// contended returns a contended scenario: contendedWriters goroutines on
// one name, spread round-robin over clients Clients (a fairrw.Client, a
// rueidislock Locker, a go-redis client for redislock and redsync), each
// goroutine its own lock owner looping write lock+unlock with no hold and
// no think. Its tables and verdict put each contender's grants/s beside
// the fastest peer library's, with Jain's index and the waits: what
// barging buys the peers, and what FIFO order costs.
func contended(name string, clients int) scenario {
	on, label := fmt.Sprintf("%d clients", clients), fmt.Sprintf("%d Clients", clients)
	if clients == 1 {
		on, label = "one client", "one Client"
	}
	return scenario{
		name:  name,
		about: fmt.Sprintf("%d writers on %s, one name: lock+unlock with no hold and no think", contendedWriters, on),
		classes: []class{
			{kind: fairness.Writer, workers: contendedWriters, clients: clients},
		},
		role:    fairnessCost,
		label:   "contended, " + label,
		cohorts: true,
	}
}

// scenarios are every scenario, in the order they run and print.
var scenarios = []scenario{
	{
		name:  "uncontended",
		about: "64 writers on 4 clients, each on its own name: lock+unlock with no hold and no think",
		classes: []class{
			{kind: fairness.Writer, workers: 64, clients: 4},
		},
		distinct: true,
	},
	// The three contended scenarios differ only in how many Clients the
	// same 8 writers share: with one Client, a lock that passes the lock
	// among its own waiters without Redis (cohorting) would gain most.
	contended("contended", 2),
	contended("contended-1client", 1),
	contended("contended-4clients", 4),
	{
		name: "queue-cost",
		about: fmt.Sprintf("contended with 8 writers on 2 clients, then 256 on 8 (fair policies' target: 256÷8 <= %.1f)",
			queueCostTarget),
		kind: queueCost,
		queues: []class{
			{kind: fairness.Writer, workers: 8, clients: 2},
			// 32 owners per client: rueidis multiplexes them on its
			// pipelined connection, and go-redis caps its pool at 10
			// connections per CPU, so the server sees a few hundred
			// connections at most.
			{kind: fairness.Writer, workers: 256, clients: 8},
		},
		// Two runs per contender, the 256 writers' lasting up to twice
		// the window (their last requests may wait a whole window): about
		// 17s with a 1s window on two CPUs, which would make the default
		// run's minute more than a quarter longer.
		optional: true,
	},
	{
		name: "server-cost",
		about: fmt.Sprintf("Redis main-thread CPU, commands and scripts per lock+unlock, with no hold: %d workers on %d clients, each "+
			"on its own name (writes, then reads), then %d writers on %d clients on one name; beside two bare script pairs. "+
			"Each measurement lasts half the window", costUncontended.workers, costUncontended.clients, costContended.workers, costContended.clients),
		kind: serverCost,
		role: serverCosts,
	},
	{
		name:  "handoff",
		about: "a holder releases while a waiter on another client is blocked: waiter granted minus holder's Unlock call",
		kind:  handoff,
	},
	{
		name:      "handoff-1client",
		about:     "as handoff, the holder and the waiter two handles of one client (fairrw: its cohort passes the lock)",
		kind:      handoff,
		oneClient: true,
	},
	{
		name:  "reader-flood",
		about: "6 readers on 2 clients (hold 20ms, think 0-2ms: reads overlap all the time), 1 writer (hold 5ms, think 20ms)",
		classes: []class{
			{kind: fairness.Reader, workers: 6, clients: 2, hold: 20 * time.Millisecond, thinkMax: 2 * time.Millisecond},
			{kind: fairness.Writer, workers: 1, clients: 1, hold: 5 * time.Millisecond, thinkMin: 20 * time.Millisecond, thinkMax: 20 * time.Millisecond},
		},
		role: starvation, exposes: fairness.Writer,
	},
	{
		name:  "writer-burst",
		about: "4 readers on 2 clients (hold 20ms, think 0-2ms), 4 writers on 2 clients arriving together every 200ms (hold 5ms)",
		classes: []class{
			{kind: fairness.Reader, workers: 4, clients: 2, hold: 20 * time.Millisecond, thinkMax: 2 * time.Millisecond},
			{kind: fairness.Writer, workers: 4, clients: 2, hold: 5 * time.Millisecond, period: 200 * time.Millisecond},
		},
		role: starvation, exposes: fairness.Writer,
	},
	{
		// The mirror image of reader-flood: the writers' requests overlap
		// (4 x 5ms held per 5-7ms of think and handoff), so a writer is
		// nearly always queued. A writer-preferring lock lets no reader in
		// while one is: its readers wait out the window. Phase-fair
		// alternates phases; Redisson queues nobody.
		name:  "writer-stream",
		about: "4 writers on 2 clients (hold 5ms, think 0-2ms: a writer is nearly always waiting), 4 readers on 2 clients (hold 5ms, think 5-10ms)",
		classes: []class{
			{kind: fairness.Writer, workers: 4, clients: 2, hold: 5 * time.Millisecond, thinkMax: 2 * time.Millisecond},
			{kind: fairness.Reader, workers: 4, clients: 2, hold: 5 * time.Millisecond, thinkMin: 5 * time.Millisecond, thinkMax: 10 * time.Millisecond},
		},
		role: starvation, exposes: fairness.Reader,
		cohorts: true,
	},
	{
		// The writer-stream above with every worker on one client, as a
		// service's own goroutines: its cohort could pass the write among
		// its writers while its readers wait.
		name:      "writer-stream-1client",
		about:     "2 writers (hold 20ms, no think) and 3 readers (hold 5ms, think 5-10ms) on one client: a stream of writes its readers wait behind",
		oneClient: true,
		classes: []class{
			{kind: fairness.Writer, workers: 2, clients: 1, hold: 20 * time.Millisecond},
			{kind: fairness.Reader, workers: 3, clients: 1, hold: 5 * time.Millisecond, thinkMin: 5 * time.Millisecond, thinkMax: 10 * time.Millisecond},
		},
		role: starvation, exposes: fairness.Reader,
		cohorts: true,
	},
	{
		name: "cohort-yield",
		about: "4 writers on one client stream writes (hold 2ms, no think); a writer of another client asks every 20-30ms (hold 1ms): " +
			"its wait, and the holds of the stream granted meanwhile",
		kind: arrival,
		classes: []class{
			{kind: fairness.Writer, workers: 4, clients: 1, hold: 2 * time.Millisecond},
			{kind: fairness.Writer, workers: 1, clients: 1, hold: time.Millisecond, thinkMin: 20 * time.Millisecond, thinkMax: 30 * time.Millisecond},
		},
		role:    yieldBound,
		cohorts: true,
	},
	mixed(0.50),
	mixed(0.90),
	mixed(0.99),
	{
		name:   "renewal",
		about:  "one process holds N leases (1s lease, renewed every third of it): Redis calls and time per renewal round",
		kind:   renewal,
		leases: []int{1000, 10000},
	},
}

// scenarioNames returns the names of every scenario, comma-separated.
func scenarioNames() string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

// defaultScenarioNames returns the names of the scenarios a run without
// -scenarios or -full runs (all but the optional ones), comma-separated.
func defaultScenarioNames() string {
	var names []string
	for _, s := range scenarios {
		if !s.optional {
			names = append(names, s.name)
		}
	}
	return strings.Join(names, ",")
}

// optionalScenarioNames returns the names of the optional scenarios,
// comma-separated.
func optionalScenarioNames() string {
	var names []string
	for _, s := range scenarios {
		if s.optional {
			names = append(names, s.name)
		}
	}
	return strings.Join(names, ",")
}

// pickScenarios parses -scenarios; the result keeps the order of
// scenarios.
func pickScenarios(list string) ([]scenario, error) {
	want, err := pickNames(list, scenarioNames(), "scenario")
	if err != nil {
		return nil, err
	}
	var out []scenario
	for _, s := range scenarios {
		if want[s.name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// contenderNames returns the names of all, comma-separated.
func contenderNames(all []contender.Contender) string {
	var names []string
	for _, c := range all {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// pickContenders parses -contenders out of all; the result keeps all's
// order.
func pickContenders(list string, all []contender.Contender) ([]contender.Contender, error) {
	want, err := pickNames(list, contenderNames(all), "contender")
	if err != nil {
		return nil, err
	}
	var out []contender.Contender
	for _, c := range all {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// pickNames parses a comma-separated list of names out of known (also
// comma-separated).
func pickNames(list, known, what string) (map[string]bool, error) {
	valid := map[string]bool{}
	for name := range strings.SplitSeq(known, ",") {
		valid[name] = true
	}
	want := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !valid[name] {
			return nil, fmt.Errorf("unknown %s %q (have %s)", what, name, known)
		}
		want[name] = true
	}
	if len(want) == 0 {
		return nil, errors.New("no " + what + " selected")
	}
	return want, nil
}

// limit is how long one run of s (one repetition by one contender) may
// take before it counts as stalled: far more than a run takes on a loaded
// machine (a 1s window's closed loop takes about 2s, its warm-up a few
// round trips), so that only a contender that has stopped making progress
// reaches it.
func (s *scenario) limit(window time.Duration, leases []int) time.Duration {
	switch s.kind {
	case handoff: // runHandoff's own bound is 5 windows + 10s
		return 20*time.Second + 6*window
	case queueCost:
		return time.Duration(len(s.queues)) * (20*time.Second + 3*window)
	case serverCost: // three measurements of half a window, their set-ups and a drain
		return 30*time.Second + 3*window
	case renewal:
		if leases == nil {
			leases = s.leases
		}
		d := 30 * time.Second
		for _, n := range leases {
			d += 10*time.Second + time.Duration(n)*5*time.Millisecond
		}
		return d
	}
	return 20*time.Second + 3*window
}

// extra reports whether ct is one of contender.Extras (not in
// contender.All).
func extra(ct contender.Contender) bool {
	return slices.ContainsFunc(contender.Extras(), func(c contender.Contender) bool { return c.Name == ct.Name })
}

// cohortsOff reports whether ct is one of contender.CohortsOff.
func cohortsOff(ct contender.Contender) bool {
	return slices.ContainsFunc(contender.CohortsOff(), func(c contender.Contender) bool { return c.Name == ct.Name })
}
