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

// checkTables asserts that every scenario has a heading and, in both of its
// tables, one row per policy.
func checkTables(t *testing.T, stdout string, scenarioNames ...string) {
	t.Helper()
	for _, s := range scenarioNames {
		if !strings.Contains(stdout, "== "+s+":") {
			t.Errorf("no table for %s in:\n%s", s, stdout)
		}
	}
	for _, pc := range policies {
		rows := regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(pc.name)+`\s+\d`).FindAllString(stdout, -1)
		if want := 2 * len(scenarioNames); len(rows) != want {
			t.Errorf("%d rows for policy %s, want %d (two tables per scenario):\n%s", len(rows), pc.name, want, stdout)
		}
	}
}

// TestSmokeAllScenarios runs every scenario under every policy briefly on
// miniredis and checks the tables, the progress lines and the JSON.
func TestSmokeAllScenarios(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.json")
	stdout, stderr := runFairbench(t, "-redis", "miniredis", "-duration", "300ms", "-json", path)
	names := strings.Split(scenarioNames(), ",")
	checkTables(t, stdout, names...)
	for _, want := range []string{"machine    " + runtime.GOOS + "/" + runtime.GOARCH, "in-process miniredis", "window 300ms"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("header lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "in-process miniredis") {
		t.Errorf("stderr does not say miniredis is used:\n%s", stderr)
	}
	if n := strings.Count(stderr, "... done in"); n != len(names)*len(policies) {
		t.Errorf("%d progress lines, want %d:\n%s", n, len(names)*len(policies), stderr)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Settings struct {
			Scenarios []string `json:"scenarios"`
			Policies  []string `json:"policies"`
			DurationS float64  `json:"duration_s"`
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
			Policy     string                    `json:"policy"`
			GrantsPerS *float64                  `json:"grants_per_s"`
			Classes    map[string]map[string]any `json:"classes"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	if rep.Settings.DurationS != 0.3 || len(rep.Settings.Scenarios) != len(names) || len(rep.Settings.Policies) != len(policies) {
		t.Errorf("settings = %+v", rep.Settings)
	}
	if rep.Machine.GOOS == "" || rep.Machine.NumCPU < 1 || rep.Machine.GoVersion == "" || rep.Redis.Kind != kindMiniredis {
		t.Errorf("machine = %+v, redis = %+v", rep.Machine, rep.Redis)
	}
	if len(rep.Results) != len(names)*len(policies) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(names)*len(policies))
	}
	fields := []string{
		"workers", "requests", "granted", "timeouts",
		"wait_p50_ms", "wait_p90_ms", "wait_p99_ms", "wait_max_ms", "not_granted_within_bound",
		"grants_min", "grants_mean", "grants_max", "jain", "unfair", "overtakes", "grants_per_s",
	}
	for _, r := range rep.Results {
		if r.GrantsPerS == nil || *r.GrantsPerS <= 0 {
			t.Errorf("%s/%s: grants_per_s = %v", r.Scenario, r.Policy, r.GrantsPerS)
		}
		w, ok := r.Classes["writer"]
		if !ok {
			t.Errorf("%s/%s: no writer class", r.Scenario, r.Policy)
			continue
		}
		if _, ok := r.Classes["reader"]; ok != (r.Scenario != "contended") {
			t.Errorf("%s/%s: reader class present = %v", r.Scenario, r.Policy, ok)
		}
		for _, f := range fields {
			if _, ok := w[f]; !ok {
				t.Errorf("%s/%s: writer lacks %q", r.Scenario, r.Policy, f)
			}
		}
		if w["requests"].(float64) < 1 {
			t.Errorf("%s/%s: no writer requests", r.Scenario, r.Policy)
		}
	}
}

// TestQuickFallsBackToMiniredis runs -quick with no redis-server on PATH:
// fairbench must use miniredis and say so.
func TestQuickFallsBackToMiniredis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	stdout, stderr := runFairbench(t, "-quick", "-scenarios", "contended")
	checkTables(t, stdout, "contended")
	if !strings.Contains(stderr, "redis-server not found on PATH") || !strings.Contains(stdout, "window 1s") {
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
	stdout, stderr := runFairbench(t, "-redis", "server", "-duration", "200ms", "-scenarios", "contended")
	checkTables(t, stdout, "contended")
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
	got, err := pickScenarios(" contended, reader-flood,contended ")
	if err != nil || len(got) != 2 || got[0].name != "contended" || got[1].name != "reader-flood" {
		t.Fatalf("pickScenarios = %v, %v", got, err)
	}
	if _, err := pickScenarios(","); err == nil {
		t.Fatal("an empty list was accepted")
	}
}
