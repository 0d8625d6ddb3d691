package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/fairness"
)

// class is one class of closed-loop workers on a scenario's lock: each
// worker has its own handle (one lock owner), the handles are spread
// round-robin over the class's own Clients, and each loops acquire, hold,
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
}

// scenario is a closed-loop workload whose classes share one lock name.
type scenario struct {
	name    string
	about   string
	classes []class
}

var scenarios = []scenario{
	{
		name:  "reader-flood",
		about: "6 readers on 2 clients (hold 20ms, think 0-2ms: reads overlap all the time), 1 writer (hold 5ms, think 20ms)",
		classes: []class{
			{kind: fairness.Reader, workers: 6, clients: 2, hold: 20 * time.Millisecond, thinkMax: 2 * time.Millisecond},
			{kind: fairness.Writer, workers: 1, clients: 1, hold: 5 * time.Millisecond, thinkMin: 20 * time.Millisecond, thinkMax: 20 * time.Millisecond},
		},
	},
	{
		name:  "writer-burst",
		about: "4 readers on 2 clients (hold 20ms, think 0-2ms), 4 writers on 2 clients arriving together every 200ms (hold 5ms)",
		classes: []class{
			{kind: fairness.Reader, workers: 4, clients: 2, hold: 20 * time.Millisecond, thinkMax: 2 * time.Millisecond},
			{kind: fairness.Writer, workers: 4, clients: 2, hold: 5 * time.Millisecond, period: 200 * time.Millisecond},
		},
	},
	{
		name:  "contended",
		about: "8 writers on 2 clients, one name, lock+unlock with no hold and no think",
		classes: []class{
			{kind: fairness.Writer, workers: 8, clients: 2},
		},
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

// pickScenarios parses -scenarios.
func pickScenarios(list string) ([]scenario, error) {
	var out []scenario
	seen := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		found := false
		for _, s := range scenarios {
			if s.name == name {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", name, scenarioNames())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no scenario selected")
	}
	return out, nil
}

// policyCase is a policy under the name fairbench reports.
type policyCase struct {
	name   string
	policy fairrw.Policy
}

var policies = []policyCase{
	{"redisson", fairrw.Redisson()},
	{"writer-preferring", fairrw.WriterPreferring()},
	{"phase-fair", fairrw.PhaseFair()},
}

// outcome is what one run of a scenario under a policy recorded.
type outcome struct {
	start   time.Time
	window  time.Duration
	elapsed time.Duration
	rec     *fairness.Recorder
}

// runScenario runs s under pc on its own lock name for window. Requests
// asked within the window are recorded, each bounded by a context of the
// window's length: one still waiting then is recorded as timed out, at the
// window. The workers keep the same load past the window, unrecorded, until
// every worker has asked past it, so that every recorded request waits under
// the same load until it ends. Any lock error (other than a recorded
// timeout) ends the run with an error.
func runScenario(ctx context.Context, r *redisEnv, s scenario, pc policyCase, name string, window time.Duration) (*outcome, error) {
	var clients []*fairrw.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var workers []*fairness.Worker
	for i := range s.classes {
		cl := &s.classes[i]
		own := make([]*fairrw.Client, cl.clients)
		for j := range own {
			c, err := fairrw.New(fairrw.WithClientOption(r.option), fairrw.WithPolicy(pc.policy))
			if err != nil {
				return nil, err
			}
			clients = append(clients, c)
			own[j] = c
			if err := warmUp(ctx, c.RWMutex(name)); err != nil {
				return nil, err
			}
		}
		for j := range cl.workers {
			workers = append(workers, &fairness.Worker{
				Class: cl.kind, Index: j, Mutex: fairness.RW(own[j%len(own)].RWMutex(name)), Hold: cl.hold, Think: cl.thinkRule(),
			})
		}
	}
	lp := &fairness.Loop{Window: window, Rec: new(fairness.Recorder)}
	start, err := lp.Run(ctx, workers)
	if err != nil {
		return nil, err
	}
	return &outcome{start: start, window: window, elapsed: time.Since(start), rec: lp.Rec}, nil
}

// thinkRule is the class's pause after a release.
func (c *class) thinkRule() func(time.Duration) time.Duration {
	switch {
	case c.period > 0:
		return fairness.PeriodThink(c.period)
	case c.thinkMax > 0:
		return fairness.UniformThink(c.thinkMin, c.thinkMax)
	default:
		return nil
	}
}

// warmUp loads the policy's scripts with one write lock+unlock.
func warmUp(ctx context.Context, m *fairrw.RWMutex) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := m.Lock(ctx)
	if err != nil {
		return fmt.Errorf("warm-up lock: %w", err)
	}
	if err := l.Unlock(ctx); err != nil {
		return fmt.Errorf("warm-up unlock: %w", err)
	}
	return nil
}
