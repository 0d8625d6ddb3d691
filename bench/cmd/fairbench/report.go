package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairrw/rwlock/internal/fairness"
)

// report is everything one fairbench run measured; -json writes it.
type report struct {
	Settings settings  `json:"settings"`
	Machine  machine   `json:"machine"`
	Redis    *redisEnv `json:"redis"`
	Results  []result  `json:"results"`
}

type settings struct {
	Scenarios []string `json:"scenarios"`
	Policies  []string `json:"policies"`
	// DurationS is the window of one run (one scenario under one policy),
	// also every recorded request's timeout.
	DurationS float64 `json:"duration_s"`
	// BoundMS is the bound of not_granted_within_bound.
	BoundMS float64 `json:"bound_ms"`
	Started string  `json:"started"`
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

// result is one scenario under one policy.
type result struct {
	Scenario string  `json:"scenario"`
	Policy   string  `json:"policy"`
	WindowS  float64 `json:"window_s"`
	ElapsedS float64 `json:"elapsed_s"`
	// Classes are keyed "reader" and "writer"; a class the scenario does
	// not have is absent.
	Classes map[string]*classResult `json:"classes"`
	// GrantsPerS is the grants of both classes within the window, per
	// second of window.
	GrantsPerS float64 `json:"grants_per_s"`
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

// summarize computes the result of one run.
func summarize(s scenario, pc policyCase, o *outcome, bound time.Duration) result {
	res := result{
		Scenario: s.name, Policy: pc.name,
		WindowS: o.window.Seconds(), ElapsedS: o.elapsed.Seconds(),
		Classes: map[string]*classResult{},
	}
	for _, c := range s.classes {
		reqs := o.rec.Requests(c.kind)
		sum := fairness.Summarize(reqs)
		spread := fairness.SpreadOf(fairness.GrantsPerClient(reqs, c.workers))
		cr := &classResult{
			Workers: c.workers, Requests: sum.Count, Granted: sum.Count - sum.Timeouts, Timeouts: sum.Timeouts,
			WaitP50MS: msOf(sum.P50), WaitP90MS: msOf(sum.P90), WaitP99MS: msOf(sum.P99), WaitMaxMS: msOf(sum.Max),
			NotGrantedWithinBound: fairness.NotGrantedWithin(reqs, bound),
			GrantsMin:             spread.Min, GrantsMean: spread.Mean, GrantsMax: spread.Max,
			Jain: spread.Jain, Unfair: spread.Unfair,
			Overtakes:  fairness.Overtakes(reqs),
			GrantsPerS: fairness.GrantsPerSecond(reqs, o.start, o.window),
		}
		res.Classes[c.kind.String()] = cr
		res.GrantsPerS += cr.GrantsPerS
	}
	return res
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeHeader prints the run's settings, machine and Redis.
func writeHeader(w io.Writer, rep *report) {
	m := rep.Machine
	fmt.Fprintf(w, "fairbench  %s\n", rep.Settings.Started)
	fmt.Fprintf(w, "machine    %s/%s, %d CPUs (GOMAXPROCS %d), %s", m.GOOS, m.GOARCH, m.NumCPU, m.GOMAXPROCS, m.GoVersion)
	if m.CPU != "" {
		fmt.Fprintf(w, ", %s", m.CPU)
	}
	fmt.Fprintln(w)
	if rep.Redis.Kind == kindMiniredis {
		fmt.Fprintf(w, "redis      in-process miniredis at %s (no redis-server: not a real Redis's figures)\n", rep.Redis.Addr)
	} else {
		fmt.Fprintf(w, "redis      %s %s at %s\n", rep.Redis.Kind, rep.Redis.Version, rep.Redis.Addr)
	}
	fmt.Fprintf(w, "settings   window %v per scenario per policy (also each request's timeout), starvation bound %vms\n",
		time.Duration(rep.Settings.DurationS*float64(time.Second)), rep.Settings.BoundMS)
	fmt.Fprintln(w, "waits     nearest-rank percentiles in ms from asking to grant; timeouts count at the window")
}

// writeTable prints one scenario's results: a table of waits and one of
// fairness and throughput, each with one row per policy.
func writeTable(w io.Writer, s scenario, results []result) error {
	fmt.Fprintf(w, "\n== %s: %s\n", s.name, s.about)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "waits (ms)\tW p50\tW p90\tW p99\tW max\tW t/o\tW >bound\tR p50\tR p90\tR p99\tR max\tR t/o\t")
	for _, r := range results {
		row := []string{r.Policy}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, f1(c.WaitP50MS), f1(c.WaitP90MS), f1(c.WaitP99MS), f1(c.WaitMaxMS),
				fmt.Sprint(c.Timeouts), fmt.Sprintf("%.1f%%", 100*c.NotGrantedWithinBound))
		} else {
			row = append(row, dashes(6)...)
		}
		if c := r.Classes["reader"]; c != nil {
			row = append(row, f1(c.WaitP50MS), f1(c.WaitP90MS), f1(c.WaitP99MS), f1(c.WaitMaxMS), fmt.Sprint(c.Timeouts))
		} else {
			row = append(row, dashes(5)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fairness\tW jain\tW grants min/mean/max\tW overtakes\tW grants/s\tR jain\tR grants min/mean/max\tR grants/s\tgrants/s\t")
	for _, r := range results {
		row := []string{r.Policy}
		if c := r.Classes["writer"]; c != nil {
			row = append(row, fmt.Sprintf("%.3f", c.Jain), spreadCell(c), fmt.Sprint(c.Overtakes), fmt.Sprintf("%.0f", c.GrantsPerS))
		} else {
			row = append(row, dashes(4)...)
		}
		if c := r.Classes["reader"]; c != nil {
			row = append(row, fmt.Sprintf("%.3f", c.Jain), spreadCell(c), fmt.Sprintf("%.0f", c.GrantsPerS))
		} else {
			row = append(row, dashes(3)...)
		}
		row = append(row, fmt.Sprintf("%.0f", r.GrantsPerS))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func spreadCell(c *classResult) string {
	s := fmt.Sprintf("%d/%.1f/%d", c.GrantsMin, c.GrantsMean, c.GrantsMax)
	if c.Unfair {
		s += " !"
	}
	return s
}

func dashes(n int) []string {
	d := make([]string, n)
	for i := range d {
		d[i] = "-"
	}
	return d
}

// writeLegend explains the columns once, under the tables.
func writeLegend(w io.Writer) {
	fmt.Fprint(w, `
W = writers, R = readers; waits in ms; t/o = requests timed out (at the window);
>bound = share of requests not granted within the starvation bound; jain = Jain's
index of grants over the class's workers; "!" = max grants > 2 x min grants;
overtakes = grants to writers asked later than a writer and granted before it
(client-side times); grants/s = grants within the window per second.
`)
}

// writeJSON writes rep to path.
func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
