package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/contender"
)

// TestContendedVerdict checks the contended scenarios' ratios to the
// fastest peer, their table and their verdict lines from made-up figures:
// the fastest peer is whichever peer has the most grants/s, the policies
// follow fastest first, each with its Jain index and max wait.
func TestContendedVerdict(t *testing.T) {
	scs := verdictScenarios(t, "contended-1client,contended-4clients")
	bySc := [][]result{
		{
			loopResult("writer-preferring", 6000, fine(4, 1), nil),
			loopResult("phase-fair", 6240, fine(10, 0.999), nil),
			loopResult("rueidislock", 12000, fine(40, 0.9), nil),
			loopResult("redislock", 24000, starvedClass(0.001, 5), nil),
			loopResult("redsync", 15000, fine(300, 0.77), nil),
		},
		{
			loopResult("redisson", 1400, fine(57, 0.98), nil),
			loopResult("writer-preferring", 4300, fine(7.7, 1), nil),
			loopResult("redsync", 15000, fine(300, 0.5), nil),
		},
	}
	for i, s := range scs {
		for j := range bySc[i] {
			bySc[i][j].Scenario = s.name
		}
	}
	all := append(append([]result(nil), bySc[0]...), bySc[1]...) // the report's copies
	cts := contender.All()
	setPeerRatios(scs, bySc, cts, all)
	for i, want := range []float64{0.25, 0.26, 0.5, 1, 0.625} {
		if got := bySc[0][i].VsBestPeer; got != want || all[i].VsBestPeer != want {
			t.Errorf("%s: × best peer %v (report %v), want %v", bySc[0][i].Contender, got, all[i].VsBestPeer, want)
		}
	}
	if got := all[len(all)-1].VsBestPeer; got != 1 {
		t.Errorf("contended-4clients redsync: × best peer %v in the report, want 1", got)
	}

	got := verdictOf(scs, bySc, cts, time.Second)
	checkVerdict(t, got, []verdictLine{
		{"fairness cost", "contended, one Client: fastest peer redislock 24000 grants/s (jain 0.90, max wait 1000ms); " +
			"phase-fair 0.26× (jain 1.00, max wait 10.0ms); writer-preferring 0.25× (jain 1.00, max wait 4.0ms)"},
		{"fairness cost", "contended, 4 Clients: fastest peer redsync 15000 grants/s (jain 0.50, max wait 300ms); " +
			"writer-preferring 0.29× (jain 1.00, max wait 7.7ms); redisson 0.09× (jain 0.98, max wait 57.0ms)"},
	})

	var b bytes.Buffer
	if err := writeVsPeers(&b, bySc[0]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^\s*vs peers \(ms\)\s+grants/s\s+× best peer\s+W jain\s+W p50\s+W p99\s+W max\s+W t/o$`,
		`(?m)^\s*writer-preferring\s+6000\s+0\.25\s+1\.000\s+0\.0\s+4\.0\s+4\.0\s+0$`,
		`(?m)^\s*redislock\s+24000\s+1\.00\s+0\.900\s+0\.0\s+1000\.0\s+1000\.0\s+5$`,
	} {
		if !regexp.MustCompile(want).MatchString(b.String()) {
			t.Errorf("no line matching %s in:\n%s", want, b.String())
		}
	}
	// Without a peer, no ratio: dashes.
	b.Reset()
	noPeer := []result{loopResult("redisson", 1400, fine(57, 0.98), nil)}
	if err := writeVsPeers(&b, noPeer); err != nil || !regexp.MustCompile(`(?m)^\s*redisson\s+1400\s+-\s`).MatchString(b.String()) {
		t.Errorf("without a peer (%v):\n%s", err, b.String())
	}
}

// TestContendedClients checks that the contended scenarios open as many
// clients as they say (one Client for contended-1client, four for
// contended-4clients, two for contended) and spread the 8 writers over
// them: redislock, counted, on miniredis.
func TestContendedClients(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		clients  int64
	}{{"contended", 2}, {"contended-1client", 1}, {"contended-4clients", 4}} {
		ct := contender.Peers()[1] // redislock
		var opened, handles atomic.Int64
		open := ct.Open
		ct.Open = func(opt rueidis.ClientOption) (contender.Client, error) {
			opened.Add(1)
			c, err := open(opt)
			if err != nil {
				return nil, err
			}
			return countingClient{c, &handles}, nil
		}
		var out bytes.Buffer
		err := runWith(context.Background(), []string{"-redis", "miniredis", "-duration", "100ms", "-scenarios", tc.scenario, "-out", ""},
			[]contender.Contender{ct}, &out, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.scenario, err)
		}
		// One warm-up handle per client, then one per writer.
		if opened.Load() != tc.clients || handles.Load() != tc.clients+contendedWriters {
			t.Errorf("%s: %d clients opened, %d handles, want %d and %d", tc.scenario, opened.Load(), handles.Load(),
				tc.clients, tc.clients+contendedWriters)
		}
	}
}

// countingClient counts the handles a Client hands out.
type countingClient struct {
	contender.Client
	handles *atomic.Int64
}

func (c countingClient) Mutex(name string) contender.Mutex {
	c.handles.Add(1)
	return c.Client.Mutex(name)
}

// TestContendedRedisServer runs contended-1client and contended-4clients
// briefly on a redis-server under every contender: each scenario has its
// table beside the peers, with a number in every cell and the fastest
// peer at 1.00, within 120 columns; the verdict has a line for each; the
// JSON has the ratios.
func TestContendedRedisServer(t *testing.T) {
	needRedisServer(t)
	path := filepath.Join(t.TempDir(), "results.json")
	stdout, _ := runFairbench(t, "-redis", "server", "-scenarios", "contended-1client,contended-4clients", "-duration", "200ms",
		"-out", "", "-json", path)
	checkTables(t, stdout, nil, "contended-1client", "contended-4clients")
	checkWidth(t, stdout)
	num := `(\d+(?:\.\d+)?)`
	row := regexp.MustCompile(`^\s*(\S+)\s+` + num + `\s+` + num + `\s+` + num + `(?: !)?` + strings.Repeat(`\s+`+num, 4) + `$`)
	for _, name := range []string{"contended-1client", "contended-4clients"} {
		sec := section(stdout, name)
		i := strings.Index(sec, "vs peers (ms)")
		if i < 0 {
			t.Errorf("%s: no table beside the peers:\n%s", name, sec)
			continue
		}
		sec = sec[i:]
		if j := strings.Index(sec, "\nW = writers"); j >= 0 {
			sec = sec[:j]
		}
		rows, ones := 0, 0
		for line := range strings.Lines(sec) {
			m := row.FindStringSubmatch(strings.TrimRight(line, "\n"))
			if m == nil {
				continue
			}
			rows++
			if m[3] == "1.00" && !isPolicy(m[1]) {
				ones++
			}
			if g, _ := strconv.ParseFloat(m[2], 64); g <= 0 {
				t.Errorf("%s: no grants: %q", name, line)
			}
		}
		if want := len(contender.All()) + len(contender.CohortsOff()); rows != want || ones < 1 {
			t.Errorf("%s: %d rows of numbers (want %d), %d peers at 1.00 (want one at least):\n%s", name, rows, want, ones, sec)
		}
	}
	for _, want := range []string{"\nfairness cost  contended, one Client: fastest peer ", "\nfairness cost  contended, 4 Clients: fastest peer "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the verdict lacks %q:\n%s", want, stdout)
		}
	}
	if !regexp.MustCompile(`contended, one Client: fastest peer \S+ \d+ grants/s \(jain \d\.\d\d, max wait [\d.]+ms\); ` +
		`\S+ \d+\.\d\d× \(jain \d\.\d\d, max wait [\d.]+ms\)`).MatchString(strings.Join(strings.Fields(stdout), " ")) {
		t.Errorf("the one-Client verdict line is not the fastest peer then the policies:\n%s", stdout)
	}

	var rep struct {
		Results []struct {
			Scenario   string  `json:"scenario"`
			Contender  string  `json:"contender"`
			VsBestPeer float64 `json:"grants_per_s_vs_best_peer"`
		} `json:"results"`
	}
	readJSON(t, path, &rep)
	if want := 2 * (len(contender.All()) + len(contender.CohortsOff())); len(rep.Results) != want {
		t.Fatalf("%d results, want %d", len(rep.Results), want)
	}
	best := map[string]float64{}
	for _, r := range rep.Results {
		if r.VsBestPeer <= 0 {
			t.Errorf("%s/%s: grants_per_s_vs_best_peer = %v", r.Scenario, r.Contender, r.VsBestPeer)
		}
		if !isPolicy(r.Contender) {
			best[r.Scenario] = max(best[r.Scenario], r.VsBestPeer)
		}
	}
	if best["contended-1client"] != 1 || best["contended-4clients"] != 1 {
		t.Errorf("the fastest peer's ratio: %v, want 1 in each", best)
	}
}

// isPolicy reports whether name is one of fairrw's read-write policies.
func isPolicy(name string) bool { return policiesOf(allContenders())[name] }
