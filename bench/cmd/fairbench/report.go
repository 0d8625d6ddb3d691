package main

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// report is everything one fairbench run measured; -json writes it.
type report struct {
	Settings settings  `json:"settings"`
	Machine  machine   `json:"machine"`
	Redis    *redisEnv `json:"redis"`
	// Contenders describes every contender that ran.
	Contenders []contenderInfo `json:"contenders"`
	// Results holds one result per scenario and contender: the medians
	// over the repetitions.
	Results []result `json:"results"`
	// Runs holds every repetition's own result, when there were several.
	Runs []result `json:"runs,omitempty"`
	// Failures are the runs that failed or stalled, left out of Results.
	Failures []failure `json:"failures,omitempty"`
	// Interrupted is true when the run was stopped (Ctrl-C) before its end.
	Interrupted bool `json:"interrupted,omitempty"`
}

type settings struct {
	Scenarios   []string `json:"scenarios"`
	Contenders  []string `json:"contenders"`
	Repetitions int      `json:"repetitions"`
	// DurationS is the window of one closed-loop or handoff run (one
	// scenario under one contender), also every recorded request's
	// timeout.
	DurationS float64 `json:"duration_s"`
	// BoundMS is the bound of not_granted_within_bound.
	BoundMS float64 `json:"bound_ms"`
	Started string  `json:"started"`
	// Command is the command line that produced the report.
	Command string `json:"command"`
}

// contenderInfo is what the report says about one contender.
type contenderInfo struct {
	Name     string `json:"name"`
	Library  string `json:"library"`
	Reads    bool   `json:"reads"`
	Wake     string `json:"wake"`
	Settings string `json:"settings,omitempty"`
}

type machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	CPU        string `json:"cpu,omitempty"`
}

func thisMachine() machine {
	return machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), CPU: cpuModel(),
	}
}

// cpuModel reads the first "model name" of /proc/cpuinfo; "" elsewhere.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// result is one scenario under one contender: one repetition's, or the
// medians over every repetition.
type result struct {
	Scenario  string `json:"scenario"`
	Contender string `json:"contender"`
	// Baseline is true for a bare script pair (server-cost), whose name is
	// in Contender.
	Baseline bool `json:"baseline,omitempty"`
	// Rep is the repetition, from 1; 0 for the medians.
	Rep      int     `json:"rep"`
	WindowS  float64 `json:"window_s"`
	ElapsedS float64 `json:"elapsed_s"`
	// Classes are keyed "reader" and "writer"; a class the scenario does
	// not have is absent. Closed-loop scenarios only.
	Classes map[string]*classResult `json:"classes,omitempty"`
	// GrantsPerS is the grants of both classes within the window, per
	// second of window.
	GrantsPerS float64 `json:"grants_per_s,omitempty"`
	// VsBestPeer is GrantsPerS over the fastest peer library's in the
	// same scenario (the contended scenarios, when a peer ran them; the
	// medians only).
	VsBestPeer float64 `json:"grants_per_s_vs_best_peer,omitempty"`
	// Spread is, for the medians, the lowest and highest value of the
	// headline figures over the repetitions.
	Spread map[string][2]float64 `json:"spread,omitempty"`
	// Cost is the Redis work per grant; absent where Redis has no INFO
	// commandstats (miniredis).
	Cost *cost `json:"cost,omitempty"`
	// Handoff is the handoff latency by wake-up path (handoff scenario),
	// over the samples of every repetition.
	Handoff []handoffPath `json:"handoff,omitempty"`
	// Stalled counts handoffs (over every repetition) whose blocked
	// waiter was not granted within 2s of the release: lost wake-ups.
	Stalled int `json:"stalled,omitempty"`
	// Unblocked counts handoffs left out because the waiter had not blocked
	// yet when the holder released (a loaded machine); each doubles the
	// time the next waiters are given to block.
	Unblocked int `json:"unblocked,omitempty"`
	// Renewal is one outcome per fan-out (renewal scenario).
	Renewal []*renewalOutcome `json:"renewal,omitempty"`
	// Queue is one outcome per queue length, shortest first (queue-cost
	// scenario).
	Queue []*queueOutcome `json:"queue,omitempty"`
	// ServerCost is the Redis and client cost per cycle (server-cost
	// scenario).
	ServerCost *serverCostOutcome `json:"server_cost,omitempty"`
	// Arrival is what another Client's writer waited for behind one
	// Client's stream (cohort-yield).
	Arrival *arrivalOutcome `json:"arrival,omitempty"`
	// RedisCPUGrowth is the redis-server CPU per grant at the longest
	// queue over that at the shortest (queue-cost scenario; for the
	// medians, that of the median costs); absent without commandstats.
	RedisCPUGrowth float64 `json:"redis_cpu_growth,omitempty"`

	// samples keeps what the charts draw: the recorded requests of a
	// closed-loop run, and their run's start.
	samples []fairness.Request
	start   time.Time
	// handoffs are the raw handoff samples.
	handoffs []handoffSample
}

// handoffPath is the handoff latency of one wake-up path.
type handoffPath struct {
	Woken   string  `json:"woken_by"`
	Samples int     `json:"samples"`
	P50US   float64 `json:"p50_us"`
	P90US   float64 `json:"p90_us"`
	P99US   float64 `json:"p99_us"`
	MaxUS   float64 `json:"max_us"`
}

// classResult holds the metrics of measuring.md for one class of workers.
type classResult struct {
	Workers  int `json:"workers"`
	Requests int `json:"requests"` // asked within the window
	Granted  int `json:"granted"`
	Timeouts int `json:"timeouts"` // counted at the window in the waits
	// Waits in milliseconds, nearest-rank percentiles.
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitP90MS float64 `json:"wait_p90_ms"`
	WaitP99MS float64 `json:"wait_p99_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
	// NotGrantedWithinBound is the share of requests timed out or granted
	// after more than the bound (writer starvation with WaitMaxMS).
	NotGrantedWithinBound float64 `json:"not_granted_within_bound"`
	// Grants per worker (lock owner) of the class, over the recorded
	// requests; Unfair is max > 2 x min.
	GrantsMin  int     `json:"grants_min"`
	GrantsMean float64 `json:"grants_mean"`
	GrantsMax  int     `json:"grants_max"`
	Jain       float64 `json:"jain"`
	Unfair     bool    `json:"unfair"`
	// Overtakes among the class's recorded requests (client-side order).
	Overtakes  int     `json:"overtakes"`
	GrantsPerS float64 `json:"grants_per_s"`
}

// writeJSON writes rep to path.
func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
