package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	bare "github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// The server-cost scenario's loops: lock+unlock with no hold and no think,
// as fast as the workers go. Uncontended: each worker its own handle on its
// own name, spread round-robin over the clients (the uncontended
// scenario's shape), once with writes and, for a contender with reads,
// once with reads. Contended: one name, its writers on the first clients of
// the uncontended loop (the contended scenario's shape).
var (
	costUncontended = class{kind: fairness.Writer, workers: 64, clients: 4}
	costContended   = class{kind: fairness.Writer, workers: 8, clients: 2}
)

// costDrain bounds the wait of a contended request still waiting when its
// window ends, at least (drainAfter). The others stop asking then, so it is
// granted at the next release; only a lost wake-up (rueidislock) waits out
// the drain, and is counted as a timeout.
const costDrain = time.Second

// costWindow is the length of each of the scenario's measurements: half
// the window (0.5s by default), so that the scenario's dozen-odd
// measurements fit in about 15s of the default run. Half a second is
// thousands of cycles at the slowest.
func costWindow(window time.Duration) time.Duration { return window / 2 }

// serverCostOutcome is one contender's (or baseline pair's) server-cost outcome.
type serverCostOutcome struct {
	// RedisCPU says whose CPU the redis_cpu_usec figures are: "main
	// thread" (INFO cpu's used_cpu_*_main_thread, where commands and
	// scripts run) or "process" (a Redis too old to report its main
	// thread's); "" without INFO cpu (miniredis).
	RedisCPU string `json:"redis_cpu,omitempty"`
	// Write and Read are the uncontended loops (Read for a contender with
	// reads only); Contended is the contended loop (not for a baseline
	// pair, which is no lock).
	Write     *cycleCost `json:"write,omitempty"`
	Read      *cycleCost `json:"read,omitempty"`
	Contended *cycleCost `json:"contended,omitempty"`
}

// cycleCost is one loop's figures. A cycle is one lock+unlock: in the
// contended loop, one grant.
type cycleCost struct {
	Workers int `json:"workers"`
	Clients int `json:"clients"`
	// Cycles counts the cycles of the whole loop, those that ended after
	// the window included (a contended loop drains its waiters): the
	// denominator of the per-cycle figures, which are counted over the
	// whole loop too.
	Cycles int `json:"cycles"`
	// Timeouts counts the requests still waiting the drain (drainAfter)
	// after the window (lost wake-ups).
	Timeouts int `json:"timeouts,omitempty"`
	// CyclesPerS is Cycles per second from the loop's start to the end of
	// its last cycle.
	CyclesPerS float64 `json:"cycles_per_s"`
	// Redis's work per cycle, from INFO cpu and commandstats; absent
	// without them (miniredis). Commands count every command Redis ran
	// but the measurer's INFO: script calls and the commands scripts ran.
	RedisCPUUsec     float64 `json:"redis_cpu_usec,omitempty"`
	CommandsPerCycle float64 `json:"commands_per_cycle,omitempty"`
	ScriptsPerCycle  float64 `json:"scripts_per_cycle,omitempty"`
	// ClientCPUUsec is fairbench's own CPU per cycle over the loop (the
	// lock library, its Redis client, the loop; nothing subtracted);
	// absent where it cannot be read.
	ClientCPUUsec float64 `json:"client_cpu_usec,omitempty"`

	// The ratios, set once the run's baselines are known (the medians',
	// with repetitions): cycles/s and Redis CPU per cycle over the bare
	// lua pair's and the bare evalsha pair's uncontended write cycle
	// (for a Read loop too), and, for a Contended loop, its Redis CPU per
	// grant over the same contender's uncontended write cycle.
	CyclesVsLuaPair     float64 `json:"cycles_per_s_vs_lua_pair,omitempty"`
	CyclesVsEvalshaPair float64 `json:"cycles_per_s_vs_evalsha_pair,omitempty"`
	CPUVsLuaPair        float64 `json:"redis_cpu_vs_lua_pair,omitempty"`
	CPUVsEvalshaPair    float64 `json:"redis_cpu_vs_evalsha_pair,omitempty"`
	CPUVsUncontended    float64 `json:"redis_cpu_vs_uncontended,omitempty"`
}

// runServerCost runs the server-cost scenario s by ct once: the
// uncontended write loop, the read loop if ct has reads, then the
// contended loop, one after the other so that each one's server CPU is its
// own.
func runServerCost(ctx context.Context, r *redisEnv, s scenario, ct contender.Contender, name string, rep int, opt *options) (result, error) {
	start := time.Now()
	window := costWindow(opt.window)
	clients := make([]contender.Client, costUncontended.clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := ct.Open(r.option)
		if err != nil {
			return result{}, err
		}
		clients[i] = c
	}
	sc := &serverCostOutcome{RedisCPU: r.cpuSource()}
	classes := []fairness.Class{fairness.Writer}
	if ct.Reads {
		classes = append(classes, fairness.Reader)
	}
	for _, class := range classes {
		mus := make([]contender.Mutex, costUncontended.workers)
		for g := range mus {
			mus[g] = clients[g%len(clients)].Mutex(fmt.Sprintf("%s:%s:%d", name, class, g))
		}
		cc, err := measureMutexes(ctx, r, mus, class, window)
		if err != nil {
			return result{}, fmt.Errorf("uncontended %ss: %w", class, err)
		}
		cc.Clients = len(clients)
		if class == fairness.Reader {
			sc.Read = cc
		} else {
			sc.Write = cc
		}
	}
	mus := make([]contender.Mutex, costContended.workers)
	for g := range mus {
		mus[g] = clients[g%costContended.clients].Mutex(name + ":contended")
	}
	cc, err := measureMutexes(ctx, r, mus, fairness.Writer, window)
	if err != nil {
		return result{}, fmt.Errorf("contended: %w", err)
	}
	cc.Clients = costContended.clients
	sc.Contended = cc
	return result{Scenario: s.name, Contender: ct.Name, Rep: rep, WindowS: window.Seconds(),
		ElapsedS: time.Since(start).Seconds(), ServerCost: sc}, nil
}

// measureMutexes warms every handle of mus up with one cycle (scripts
// loaded, connections open), then measures the loop of one worker per
// handle.
func measureMutexes(ctx context.Context, r *redisEnv, mus []contender.Mutex, class fairness.Class, window time.Duration) (*cycleCost, error) {
	cycle := func(actx context.Context, g int) error {
		h, err := mus[g].Acquire(actx, class)
		if err != nil {
			return err
		}
		// The run's ctx, as fairness.Loop's workers: a hold never depends
		// on the context it was acquired with.
		return h.Unlock(ctx)
	}
	warm := time.Now()
	for g := range mus {
		if err := warmUpCycle(ctx, func(ctx context.Context) error { return cycle(ctx, g) }); err != nil {
			return nil, fmt.Errorf("warm-up of %s: %w", mus[g].Owner(), err)
		}
	}
	return measureCycles(ctx, r, len(mus), window, drainAfter(time.Since(warm)), cycle)
}

// drainAfter is how long a measurement waits for the cycles still under
// way when its window ends: costDrain, or twice the warm-up, one cycle
// per worker one after another, if that took longer. The warm-up is what
// a round of every worker's cycle takes on this machine now (on a loaded
// one, miniredis's scripts under the race detector: 64 workers' cycles
// outlasted a second, and the window ended with none finished).
func drainAfter(warmUp time.Duration) time.Duration {
	return max(costDrain, 2*warmUp)
}

// warmUpBound bounds one warm-up cycle, and warmUpTries is how many are
// made before the run fails: rueidislock now and then leaves even an
// uncontended first Acquire waiting for a wake-up that never comes (seen
// once in this scenario's tests on a loaded machine); a new Acquire then
// goes through.
const (
	warmUpBound = 2 * time.Second
	warmUpTries = 3
)

// warmUpCycle runs cycle with a context bounded by warmUpBound, up to
// warmUpTries times while it times out.
func warmUpCycle(ctx context.Context, cycle func(context.Context) error) error {
	var err error
	for range warmUpTries {
		cctx, cancel := context.WithTimeout(ctx, warmUpBound)
		err = cycle(cctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return fmt.Errorf("%d tries of %v: %w", warmUpTries, warmUpBound, err)
}

// runBaselineCost runs the uncontended write loop of the server-cost
// scenario s over the bare script pair p: a worker per key, on rueidis
// clients built from the run's ClientOption.
func runBaselineCost(ctx context.Context, r *redisEnv, s scenario, p *bare.Pair, name string, rep int, opt *options) (result, error) {
	start := time.Now()
	window := costWindow(opt.window)
	clients := make([]rueidis.Client, costUncontended.clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := rueidis.NewClient(r.option)
		if err != nil {
			return result{}, err
		}
		clients[i] = c
	}
	keys := make([][]string, costUncontended.workers)
	for g := range keys {
		keys[g] = p.Keys(fmt.Sprintf("%s:%d", name, g))
	}
	cycle := func(actx context.Context, g int) error { return p.Cycle(actx, clients[g%len(clients)], keys[g]) }
	warm := time.Now()
	for g := range keys {
		if err := warmUpCycle(ctx, func(ctx context.Context) error { return cycle(ctx, g) }); err != nil {
			return result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	cc, err := measureCycles(ctx, r, len(keys), window, drainAfter(time.Since(warm)), cycle)
	if err != nil {
		return result{}, err
	}
	cc.Clients = len(clients)
	return result{Scenario: s.name, Contender: p.Name, Baseline: true, Rep: rep, WindowS: window.Seconds(),
		ElapsedS: time.Since(start).Seconds(), ServerCost: &serverCostOutcome{RedisCPU: r.cpuSource(), Write: cc}}, nil
}

// measureCycles runs cycle in a loop on workers goroutines (worker g calls
// cycle(actx, g)) until window has passed, each finishing the cycle it is
// in, and returns what the loop cost Redis and this process. A cycle
// still waiting drain after the window (actx then ends) counts as a
// timeout; any other error fails the measurement.
func measureCycles(ctx context.Context, r *redisEnv, workers int, window, drain time.Duration,
	cycle func(actx context.Context, g int) error) (*cycleCost, error) {
	var (
		cycles, timeouts atomic.Int64
		last             atomic.Int64 // the end of the last cycle, in ns since start
		failed           atomic.Bool
		wg               sync.WaitGroup
	)
	errs := make([]error, workers)
	before := r.sample(ctx)
	client := processCPU()
	start := time.Now()
	end := start.Add(window)
	actx, cancel := context.WithDeadline(ctx, end.Add(drain))
	defer cancel()
	for g := range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				err := cycle(actx, g)
				switch {
				case err == nil:
					cycles.Add(1)
					for at, cur := int64(time.Since(start)), last.Load(); at > cur && !last.CompareAndSwap(cur, at); cur = last.Load() {
					}
					continue
				case ctx.Err() == nil && !time.Now().Before(end.Add(drain)):
					timeouts.Add(1)
				case !failed.Swap(true): // the first failure: the others' follow from its cancel
					errs[g] = err
					cancel()
				}
				return
			}
		})
	}
	wg.Wait()
	clientAfter := processCPU()
	after := r.sample(ctx)
	if err := errors.Join(errs...); err != nil { // at most one
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := cycles.Load()
	if n == 0 {
		return nil, fmt.Errorf("no cycle ended within %v and %v more", window, drain)
	}
	cc := &cycleCost{Workers: workers, Cycles: int(n), Timeouts: int(timeouts.Load()),
		CyclesPerS: float64(n) / time.Duration(last.Load()).Seconds()}
	if before != nil && after != nil {
		d := after.stats.Sub(before.stats)
		cpu := after.main - before.main
		if before.main <= 0 {
			cpu = after.cpu - before.cpu
		}
		cc.RedisCPUUsec = usOf(cpu) / float64(n)
		cc.CommandsPerCycle = float64(d.Commands("info")) / float64(n)
		cc.ScriptsPerCycle = float64(d.Scripts()) / float64(n)
	}
	if client >= 0 && clientAfter >= 0 {
		cc.ClientCPUUsec = usOf(clientAfter-client) / float64(n)
	}
	return cc, nil
}

// cpuSource says whose CPU the server-cost figures are (serverCost.RedisCPU).
func (r *redisEnv) cpuSource() string {
	s := r.sample(context.Background())
	switch {
	case s == nil:
		return ""
	case s.main > 0:
		return "main thread"
	}
	return "process"
}

// progress says how much the run measured, for the progress line.
func (sc *serverCostOutcome) progress() string {
	note := fmt.Sprintf(" (%d write cycles", sc.Write.Cycles)
	if sc.Read != nil {
		note += fmt.Sprintf(", %d read cycles", sc.Read.Cycles)
	}
	if sc.Contended != nil {
		note += fmt.Sprintf(", %d contended grants", sc.Contended.Cycles)
	}
	return note + ")"
}

// setServerCostRatios fills in the ratios of every server-cost result of
// one scenario (results), from the baselines' among them. A ratio whose
// reference is missing (a baseline that failed, no commandstats) stays 0.
func setServerCostRatios(results []result) {
	ref := map[string]*cycleCost{}
	for _, r := range results {
		if r.Baseline && r.ServerCost != nil {
			ref[r.Contender] = r.ServerCost.Write
		}
	}
	lua, evalsha := ref[bare.LuaPair.Name], ref[bare.EvalshaPair.Name]
	for _, r := range results {
		sc := r.ServerCost
		if sc == nil {
			continue
		}
		for _, cc := range []*cycleCost{sc.Write, sc.Read} {
			if cc == nil {
				continue
			}
			if lua != nil {
				cc.CyclesVsLuaPair = quotient(cc.CyclesPerS, lua.CyclesPerS)
				cc.CPUVsLuaPair = quotient(cc.RedisCPUUsec, lua.RedisCPUUsec)
			}
			if evalsha != nil {
				cc.CyclesVsEvalshaPair = quotient(cc.CyclesPerS, evalsha.CyclesPerS)
				cc.CPUVsEvalshaPair = quotient(cc.RedisCPUUsec, evalsha.RedisCPUUsec)
			}
		}
		if sc.Contended != nil && sc.Write != nil {
			sc.Contended.CPUVsUncontended = quotient(sc.Contended.RedisCPUUsec, sc.Write.RedisCPUUsec)
		}
	}
}

// quotient is a/b, or 0 when either is unknown (0).
func quotient(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// medianServerCost is the loop-by-loop median of the server-cost
// repetitions reps (all of one scenario and contender).
func medianServerCost(reps []result) *serverCostOutcome {
	first := reps[0].ServerCost
	m := &serverCostOutcome{RedisCPU: first.RedisCPU}
	pick := func(f func(*serverCostOutcome) *cycleCost) *cycleCost {
		var all []*cycleCost
		for _, r := range reps {
			if c := f(r.ServerCost); c != nil {
				all = append(all, c)
			}
		}
		if len(all) == 0 {
			return nil
		}
		return medianFields(all)
	}
	m.Write = pick(func(sc *serverCostOutcome) *cycleCost { return sc.Write })
	m.Read = pick(func(sc *serverCostOutcome) *cycleCost { return sc.Read })
	m.Contended = pick(func(sc *serverCostOutcome) *cycleCost { return sc.Contended })
	return m
}
