package main

import (
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bare "github.com/fairrw/rwlock/bench/internal/baseline"
	"github.com/fairrw/rwlock/bench/internal/contender"
)

// serverCostJSON is the part of a server-cost result the tests read.
type serverCostJSON struct {
	RedisCPU  string         `json:"redis_cpu"`
	Write     map[string]any `json:"write"`
	Read      map[string]any `json:"read"`
	Contended map[string]any `json:"contended"`
}

// checkServerCost checks one server-cost result of the JSON: the loops a
// baseline pair or a contender (with reads or not) has, each with cycles
// and cycles/s; with measured (a redis-server), every figure of Redis and
// every ratio too, all above 0.
func checkServerCost(t *testing.T, name string, baseline, reads, measured bool, sc *serverCostJSON) {
	t.Helper()
	if sc == nil || sc.Write == nil || (sc.Read != nil) != reads || (sc.Contended != nil) == baseline {
		t.Errorf("%s: server_cost = %+v: want write, read only with reads, contended but for a baseline", name, sc)
		return
	}
	if (sc.RedisCPU == "main thread") != measured {
		t.Errorf("%s: redis_cpu = %q", name, sc.RedisCPU)
	}
	loops := map[string]map[string]any{"write": sc.Write, "read": sc.Read, "contended": sc.Contended}
	for loop, fields := range loops {
		if fields == nil {
			continue
		}
		want := []string{"workers", "clients", "cycles", "cycles_per_s"}
		if measured {
			want = append(want, "redis_cpu_usec", "commands_per_cycle", "scripts_per_cycle", "client_cpu_usec")
			if loop == "contended" {
				want = append(want, "redis_cpu_vs_uncontended")
			} else {
				want = append(want, "cycles_per_s_vs_lua_pair", "cycles_per_s_vs_evalsha_pair", "redis_cpu_vs_lua_pair", "redis_cpu_vs_evalsha_pair")
			}
		}
		for _, f := range want {
			if v, ok := fields[f].(float64); !ok || v <= 0 {
				t.Errorf("%s %s: %s = %v, want a number above 0 (%v)", name, loop, f, fields[f], fields)
			}
		}
	}
	if measured && name == bare.LuaPair.Name && sc.Write["redis_cpu_vs_lua_pair"] != 1.0 {
		t.Errorf("lua pair: its ratio to itself is %v", sc.Write["redis_cpu_vs_lua_pair"])
	}
}

// TestServerCostRedisServer runs server-cost briefly on a redis-server
// under every contender: every cell of its tables is a number, none 0
// (the timeouts aside), and so are its JSON figures; the verdict has its
// three lines.
func TestServerCostRedisServer(t *testing.T) {
	needRedisServer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	stdout, stderr := runFairbench(t, "-redis", "server", "-scenarios", "server-cost", "-duration", "200ms",
		"-out", filepath.Join(dir, "charts"), "-json", path)
	checkTables(t, stdout, nil, "server-cost")
	checkWidth(t, stdout)
	sec := section(stdout, "server-cost")
	sec = sec[:strings.Index(sec, "\nW = writers")]
	num := `(\d+(?:\.\d+)?)`
	uncontended := regexp.MustCompile(`^\s*(\S+)\s+(write|read)` + strings.Repeat(`\s+`+num, 8) + `$`)
	contended := regexp.MustCompile(`^\s*(\S+)` + strings.Repeat(`\s+`+num, 6) + `$`)
	rows := 0
	for line := range strings.Lines(sec) {
		line = strings.TrimRight(line, "\n")
		m := uncontended.FindStringSubmatch(line)
		if m == nil {
			m = contended.FindStringSubmatch(line)
			if m != nil {
				m = m[:len(m)-1] // the timeouts may be 0
			}
		}
		if m == nil {
			if strings.Contains(line, "n/a") {
				t.Errorf("a cell is n/a on a real Redis: %q", line)
			}
			continue
		}
		rows++
		for _, cell := range m[2:] {
			if v, err := strconv.ParseFloat(cell, 64); err == nil && v <= 0 {
				t.Errorf("a cell is 0: %q", line)
			}
		}
	}
	// The baselines; the three policies' writes, reads and contended; the
	// peers' and the Mutex's writes and contended.
	if want := len(bare.Pairs()) + 3*3 + 4*2; rows != want {
		t.Errorf("%d rows of numbers, want %d:\n%s\n%s", rows, want, sec, stderr)
	}
	for _, want := range []string{"\nserver cost    Redis CPU per uncontended write cycle over the bare lua pair's ",
		"uncontended write cycles/s over the lua pair's ", "Redis CPU per contended grant (8 writers on one name)", "cheapest peer "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the verdict lacks %q:\n%s", want, stdout)
		}
	}

	var rep struct {
		Results []struct {
			Contender  string          `json:"contender"`
			Baseline   bool            `json:"baseline"`
			ServerCost *serverCostJSON `json:"server_cost"`
		} `json:"results"`
	}
	readJSON(t, path, &rep)
	sc, _ := pickScenarios("server-cost")
	want := len(bare.Pairs())
	for _, c := range allContenders() {
		if sc[0].runs(c) {
			want++
		}
	}
	if len(rep.Results) != want {
		t.Fatalf("%d results, want %d", len(rep.Results), want)
	}
	for _, r := range rep.Results {
		reads := false
		for _, c := range allContenders() {
			reads = reads || (c.Name == r.Contender && c.Reads)
		}
		checkServerCost(t, r.Contender, r.Baseline, reads, true, r.ServerCost)
	}
}

// costResult is a server-cost result with the given figures: Redis CPU
// per write cycle (and per read cycle, and per contended grant, when not
// 0) and write cycles/s.
func costResult(name string, baseline bool, writeUS, readUS, grantUS, cycles float64) result {
	sc := &serverCostOutcome{Write: &cycleCost{RedisCPUUsec: writeUS, CyclesPerS: cycles}}
	if readUS > 0 {
		sc.Read = &cycleCost{RedisCPUUsec: readUS, CyclesPerS: cycles}
	}
	if grantUS > 0 {
		sc.Contended = &cycleCost{RedisCPUUsec: grantUS}
	}
	return result{Scenario: "server-cost", Contender: name, Baseline: baseline, ServerCost: sc}
}

// TestServerCostVerdict checks the ratios and the verdict's lines from
// made-up figures: fairrw's locks ranked, the cheapest (or fastest) peer
// after them.
func TestServerCostVerdict(t *testing.T) {
	results := []result{
		costResult("lua-pair", true, 10, 0, 0, 80000),
		costResult("evalsha-pair", true, 8, 0, 0, 100000),
		costResult("redisson", false, 20, 25, 60, 40000),
		costResult("writer-preferring", false, 30, 28, 60, 30000),
		costResult("phase-fair", false, 32, 29, 64, 28000),
		costResult("mutex", false, 18, 0, 36, 42000),
		costResult("rueidislock", false, 11, 0, 44, 70000),
		costResult("redislock", false, 12, 0, 24, 60000),
		costResult("redisson-java", true, 16, 0, 0, 50000),
	}
	setServerCostRatios(results)
	wp := results[3].ServerCost
	if wp.Write.CPUVsLuaPair != 3 || wp.Write.CPUVsEvalshaPair != 3.75 || wp.Read.CPUVsLuaPair != 2.8 ||
		wp.Write.CyclesVsLuaPair != 0.375 || wp.Write.CyclesVsEvalshaPair != 0.3 || wp.Contended.CPUVsUncontended != 2 {
		t.Errorf("writer-preferring's ratios: write %+v, read %+v, contended %+v", *wp.Write, *wp.Read, *wp.Contended)
	}
	cts := append(contender.All(), contender.Extras()...)
	got := verdictOf([]scenario{{name: "server-cost", kind: serverCost, role: serverCosts}}, [][]result{results}, cts, time.Second)
	checkVerdict(t, got, []verdictLine{
		{"server cost", "Redis CPU per uncontended write cycle over the bare lua pair's 10.0µs: mutex 1.80×, " +
			"redisson 2.00× (reads 2.50×), writer-preferring 3.00× (reads 2.80×), phase-fair 3.20× (reads 2.90×); cheapest peer rueidislock 1.10×"},
		{"", "uncontended write cycles/s over the lua pair's 80000: mutex 0.53×, redisson 0.50×, writer-preferring 0.38×, " +
			"phase-fair 0.35×; fastest peer rueidislock 0.88×"},
		{"", "Redis CPU per contended grant (8 writers on one name) over the same lock's uncontended cycle: " +
			"mutex 2.00× (36.0µs), phase-fair 2.00× (64.0µs), writer-preferring 2.00× (60.0µs), redisson 3.00× (60.0µs); " +
			"cheapest peer redislock 2.00× (24.0µs)"},
		{"", "Redis CPU per uncontended write cycle of the Redisson policy over Java Redisson's own scripts (redisson-java): 1.25× (20.0µs against 16.0µs)"},
	})

	// Without INFO cpu (miniredis) only the cycles/s line is left; without
	// the lua pair, nothing can be compared.
	for i := range results {
		for _, c := range []*cycleCost{results[i].ServerCost.Write, results[i].ServerCost.Read, results[i].ServerCost.Contended} {
			if c != nil {
				*c = cycleCost{CyclesPerS: c.CyclesPerS}
			}
		}
	}
	setServerCostRatios(results)
	got = serverCostVerdict(results, map[string]bool{"redisson": true, "writer-preferring": true, "phase-fair": true, "mutex": true})
	if len(got) != 1 || got[0].Topic != "server cost" || !strings.HasPrefix(got[0].Text, "uncontended write cycles/s") {
		t.Errorf("without INFO cpu: %+v", got)
	}
	got = serverCostVerdict(results[1:], map[string]bool{"redisson": true})
	if len(got) != 1 || !strings.Contains(got[0].Text, "lua pair did not run") {
		t.Errorf("without the lua pair: %+v", got)
	}
}

// TestMedianServerCost checks the medians of server-cost repetitions:
// loop by loop, field by field, a loop missing from a repetition left out.
func TestMedianServerCost(t *testing.T) {
	reps := []result{
		costResult("redisson", false, 20, 25, 60, 40000),
		costResult("redisson", false, 30, 0, 90, 10000),
		costResult("redisson", false, 10, 35, 30, 20000),
	}
	m := medianOf(reps).ServerCost
	if m.Write.RedisCPUUsec != 20 || m.Write.CyclesPerS != 20000 || m.Read.RedisCPUUsec != 30 || m.Contended.RedisCPUUsec != 60 {
		t.Errorf("medians: write %+v, read %+v, contended %+v", *m.Write, *m.Read, *m.Contended)
	}
	if math.IsNaN(m.Write.RedisCPUUsec) {
		t.Error("NaN")
	}
}
