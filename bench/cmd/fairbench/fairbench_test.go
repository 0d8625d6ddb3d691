package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/redisnet"
)

// TestMain fails the run if any goroutine (a Client's loops, a rueidis
// connection, miniredis, a redis-server waiter) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func runFairbench(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run %q: %v\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// checkTables asserts that every scenario has a heading and that each
// contender has the rows it should: two per closed-loop scenario it runs,
// at least one per handoff, one per fan-out of the renewal.
func checkTables(t *testing.T, stdout string, skipped map[string]bool, names ...string) {
	t.Helper()
	for _, name := range names {
		i := strings.Index(stdout, "\n== "+name+":")
		if i < 0 {
			t.Errorf("no table for %s in:\n%s", name, stdout)
			continue
		}
		section := stdout[i+1:]
		if j := strings.Index(section, "\n== "); j >= 0 {
			section = section[:j]
		} else if j := strings.Index(section, "\nW = writers"); j >= 0 {
			section = section[:j]
		}
		s, _ := pickScenarios(name)
		for _, c := range contender.All() {
			if !s[0].runs(c) || skipped[c.Name] {
				continue
			}
			rows := len(regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(c.Name)+`\s+\S+`).FindAllString(section, -1))
			want := 2
			switch s[0].kind {
			case handoff:
				want = 1
			case renewal:
				want = 1 // one fan-out in these runs
			}
			if rows < want || (s[0].kind == closedLoop && rows != want) {
				t.Errorf("%s: %d rows for %s, want %d:\n%s", name, rows, c.Name, want, section)
			}
		}
	}
}

// TestSmokeAllScenarios runs every scenario under every contender briefly
// on miniredis and checks the tables, the progress lines, the charts and
// the JSON.
func TestSmokeAllScenarios(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	charts := filepath.Join(dir, "charts")
	stdout, stderr := runFairbench(t, "-redis", "miniredis", "-duration", "200ms", "-min-handoffs", "3",
		"-leases", "40", "-out", charts, "-json", path)
	names := strings.Split(scenarioNames(), ",")
	skipped := map[string]bool{"rueidislock": true} // needs client tracking
	checkTables(t, stdout, skipped, names...)
	for _, want := range []string{"machine    " + runtime.GOOS + "/" + runtime.GOARCH, "in-process miniredis", "window 200ms", "contender  rueidislock"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("header lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "in-process miniredis") || !strings.Contains(stderr, "rueidislock: skipped") {
		t.Errorf("stderr does not say miniredis is used and rueidislock skipped:\n%s", stderr)
	}
	runs := 0
	for _, name := range names {
		s, _ := pickScenarios(name)
		for _, c := range contender.All() {
			if s[0].runs(c) && !skipped[c.Name] {
				runs++
			}
		}
	}
	if n := strings.Count(stderr, "... done in"); n != runs {
		t.Errorf("%d progress lines, want %d:\n%s", n, runs, stderr)
	}
	for _, chart := range []string{"reader-flood-writer-waits.svg", "reader-flood-writer-wait-over-time.svg", "contended-throughput.svg", "handoff.svg", "renewal-40.svg"} {
		if fi, err := os.Stat(filepath.Join(charts, chart)); err != nil || fi.Size() == 0 {
			t.Errorf("chart %s: %v", chart, err)
		}
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Settings struct {
			Scenarios  []string `json:"scenarios"`
			Contenders []string `json:"contenders"`
			DurationS  float64  `json:"duration_s"`
			Command    string   `json:"command"`
		} `json:"settings"`
		Machine struct {
			GOOS      string `json:"goos"`
			NumCPU    int    `json:"num_cpu"`
			GoVersion string `json:"go_version"`
		} `json:"machine"`
		Redis struct {
			Kind string `json:"kind"`
		} `json:"redis"`
		Results []struct {
			Scenario   string                    `json:"scenario"`
			Contender  string                    `json:"contender"`
			GrantsPerS float64                   `json:"grants_per_s"`
			Classes    map[string]map[string]any `json:"classes"`
			Handoff    []struct {
				Woken   string  `json:"woken_by"`
				Samples int     `json:"samples"`
				P50US   float64 `json:"p50_us"`
			} `json:"handoff"`
			Stalled int `json:"stalled"`
			Renewal []struct {
				Leases          int     `json:"leases"`
				ScriptsPerRound float64 `json:"scripts_per_round"`
				Lost            int     `json:"lost"`
			} `json:"renewal"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	if rep.Settings.DurationS != 0.2 || len(rep.Settings.Scenarios) != len(names) || len(rep.Settings.Contenders) != len(contender.All()) ||
		!strings.HasPrefix(rep.Settings.Command, "go run ./bench/cmd/fairbench -redis miniredis") {
		t.Errorf("settings = %+v", rep.Settings)
	}
	if rep.Machine.GOOS == "" || rep.Machine.NumCPU < 1 || rep.Machine.GoVersion == "" || rep.Redis.Kind != kindMiniredis {
		t.Errorf("machine = %+v, redis = %+v", rep.Machine, rep.Redis)
	}
	if len(rep.Results) != runs {
		t.Fatalf("%d results, want %d", len(rep.Results), runs)
	}
	fields := []string{
		"workers", "requests", "granted", "timeouts",
		"wait_p50_ms", "wait_p90_ms", "wait_p99_ms", "wait_max_ms", "not_granted_within_bound",
		"grants_min", "grants_mean", "grants_max", "jain", "unfair", "overtakes", "grants_per_s",
	}
	for _, r := range rep.Results {
		switch r.Scenario {
		case "handoff":
			// fairrw never loses a wake-up: none of its handoffs may stall.
			if len(r.Handoff) == 0 || r.Handoff[0].Samples < 1 || r.Handoff[0].Woken == "" || r.Handoff[0].P50US <= 0 || r.Stalled > 0 {
				t.Errorf("%s/%s: handoff = %+v, %d stalled", r.Scenario, r.Contender, r.Handoff, r.Stalled)
			}
			continue
		case "renewal":
			// miniredis has no commandstats: no calls, but no lease lost.
			if len(r.Renewal) != 1 || r.Renewal[0].Leases != 40 || r.Renewal[0].Lost != 0 {
				t.Errorf("%s/%s: renewal = %+v", r.Scenario, r.Contender, r.Renewal)
			}
			continue
		}
		if r.GrantsPerS <= 0 {
			t.Errorf("%s/%s: grants_per_s = %v", r.Scenario, r.Contender, r.GrantsPerS)
		}
		w, ok := r.Classes["writer"]
		if !ok {
			t.Errorf("%s/%s: no writer class", r.Scenario, r.Contender)
			continue
		}
		wantReaders := r.Scenario != "contended" && r.Scenario != "uncontended"
		if _, ok := r.Classes["reader"]; ok != wantReaders {
			t.Errorf("%s/%s: reader class present = %v", r.Scenario, r.Contender, ok)
		}
		for _, f := range fields {
			if _, ok := w[f]; !ok {
				t.Errorf("%s/%s: writer lacks %q", r.Scenario, r.Contender, f)
			}
		}
		asked := w["requests"].(float64)
		if rd, ok := r.Classes["reader"]; ok && strings.HasPrefix(r.Scenario, "mixed-") {
			asked += rd["requests"].(float64) // 1% writes may draw none in 200ms
		}
		if asked < 1 {
			t.Errorf("%s/%s: no writer requests", r.Scenario, r.Contender)
		}
	}
}

// TestFallsBackToMiniredis runs with no redis-server on PATH: fairbench
// must use miniredis and say so.
func TestFallsBackToMiniredis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	stdout, stderr := runFairbench(t, "-duration", "200ms", "-scenarios", "contended", "-contenders", "redisson,redislock", "-out", "")
	checkTables(t, stdout, map[string]bool{"writer-preferring": true, "phase-fair": true, "rueidislock": true, "redsync": true}, "contended")
	if !strings.Contains(stderr, "redis-server not found on PATH") || !strings.Contains(stdout, "window 200ms") {
		t.Errorf("stderr:\n%s\nstdout:\n%s", stderr, stdout)
	}
}

// TestEmbeddedRedisServer starts redis-server from PATH and checks that it
// is gone after the run.
func TestEmbeddedRedisServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("FAIRRW_REQUIRE_REDIS") == "1" {
			t.Fatalf("FAIRRW_REQUIRE_REDIS=1 but %v", err)
		}
		t.Skip(err)
	}
	stdout, stderr := runFairbench(t, "-redis", "server", "-duration", "200ms", "-scenarios", "contended,handoff,renewal",
		"-min-handoffs", "3", "-leases", "250", "-out", "")
	checkTables(t, stdout, nil, "contended", "handoff", "renewal")
	// A real Redis has commandstats: the cost columns are measured, and a
	// renewal round of 250 leases is ceil(250/100) = 3 script calls.
	if strings.Contains(section(stdout, "contended"), "n/a") {
		t.Errorf("contended: a cost column is n/a on a real Redis:\n%s", stdout)
	}
	for _, c := range contender.Policies() {
		row := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(c.Name) + `\s+250\s+333\s+(\S+)`).FindStringSubmatch(section(stdout, "renewal"))
		if row == nil || row[1] != "3.0" {
			t.Errorf("renewal row of %s: %q, want 3.0 scripts per round:\n%s", c.Name, row, stdout)
		}
	}
	m := regexp.MustCompile(`redis-server (\S+) at (\S+)`).FindStringSubmatch(stdout)
	if m == nil || m[1] == "unknown" {
		t.Fatalf("no redis-server version and address in the header:\n%s\n%s", stdout, stderr)
	}
	if err := redisnet.Ping(m[2]); err == nil {
		t.Errorf("redis-server at %s still answers after the run", m[2])
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-scenarios", "nope"},
		{"-redis", "docker"},
		{"-duration", "0s"},
		{"-reps", "0"},
		{"-leases", "ten"},
		{"-contenders", "nope"},
		{"extra"},
		{"-no-such-flag"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		if !errors.As(err, new(usageError)) {
			t.Errorf("run %q = %v, want a usage error", args, err)
		}
		if out.Len() != 0 {
			t.Errorf("run %q wrote to stdout: %s", args, out.String())
		}
	}
}

func TestPickScenarios(t *testing.T) {
	got, err := pickScenarios(" reader-flood, contended,contended ")
	if err != nil || len(got) != 2 || got[0].name != "contended" || got[1].name != "reader-flood" {
		t.Fatalf("pickScenarios = %v, %v", got, err)
	}
	if _, err := pickScenarios(","); err == nil {
		t.Fatal("an empty list was accepted")
	}
	cs, err := pickContenders("redsync,redisson")
	if err != nil || len(cs) != 2 || cs[0].Name != "redisson" || cs[1].Name != "redsync" {
		t.Fatalf("pickContenders = %v, %v", cs, err)
	}
}

// section returns the part of stdout under the scenario's heading.
func section(stdout, name string) string {
	i := strings.Index(stdout, "\n== "+name+":")
	if i < 0 {
		return ""
	}
	s := stdout[i+1:]
	if j := strings.Index(s, "\n== "); j >= 0 {
		return s[:j]
	}
	return s
}
