package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/bench/internal/contender"
)

// loopResult is a synthetic closed-loop result: grants/s, and per class
// (absent when nil) its timeouts, share not granted within the bound, p99
// and Jain index.
func loopResult(name string, grants float64, writer, reader *classResult) result {
	r := result{Contender: name, GrantsPerS: grants, Classes: map[string]*classResult{}}
	if writer != nil {
		r.Classes["writer"] = writer
	}
	if reader != nil {
		r.Classes["reader"] = reader
	}
	return r
}

func fine(p99, jain float64) *classResult {
	return &classResult{WaitP99MS: p99, WaitMaxMS: p99, Jain: jain}
}

func starvedClass(share float64, timeouts int) *classResult {
	return &classResult{WaitP99MS: 1000, WaitMaxMS: 1000, NotGrantedWithinBound: share, Timeouts: timeouts, Jain: 0.9}
}

// verdictScenarios are the scenarios the verdict reads, by name.
func verdictScenarios(t *testing.T, names string) []scenario {
	t.Helper()
	scs, err := pickScenarios(names)
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

// TestVerdict computes the verdict of synthetic runs, then of the same
// runs with the policies' numbers swapped: the verdict must follow the
// numbers, not the policies' names.
func TestVerdict(t *testing.T) {
	scs := verdictScenarios(t, "contended,reader-flood,writer-stream,mixed-50,mixed-90")
	// scs keeps the order of scenarios: contended, reader-flood,
	// writer-stream, mixed-50, mixed-90.
	bySc := [][]result{
		{
			loopResult("redisson", 900, fine(5, 0.97), nil),
			loopResult("phase-fair", 1000, fine(3, 0.99), nil),
			loopResult("redislock", 2000, fine(100, 0.40), nil),
			loopResult("redsync", 50, fine(250, 0.30), nil),
		},
		{
			loopResult("redisson", 300, starvedClass(0.2, 3), fine(1, 1)),
			loopResult("writer-preferring", 200, fine(20, 1), fine(30, 1)),
			loopResult("phase-fair", 250, fine(15, 1), fine(25, 1)),
		},
		{
			loopResult("redisson", 300, fine(50, 1), fine(25, 1)),
			loopResult("writer-preferring", 200, fine(20, 1), starvedClass(0.005, 1)),
			loopResult("phase-fair", 250, fine(40, 1), fine(20, 1)),
		},
		{loopResult("redisson", 1000, nil, nil), loopResult("writer-preferring", 800, nil, nil), loopResult("phase-fair", 500, nil, nil)},
		{loopResult("redisson", 1000, nil, nil), loopResult("writer-preferring", 1250, nil, nil), loopResult("phase-fair", 500, nil, nil)},
	}
	cts := contender.All()
	got := verdictOf(scs, bySc, cts, time.Second)
	want := []verdictLine{
		{"reader-flood", "use phase-fair or writer-preferring (writer p99 15.0ms, 20.0ms); " +
			"redisson starves writers: 20.0% not granted within 1s, 3 timed out, max 1000ms"},
		{"writer-stream", "use phase-fair or redisson (reader p99 20.0ms, 25.0ms); " +
			"writer-preferring starves readers: 0.5% not granted within 1s, 1 timed out, max 1000ms"},
		// redisson: 1 and 0.8 -> 0.894; writer-preferring: 0.8 and 1 ->
		// 0.894 (ties by name); phase-fair 0.5 and 0.4 -> 0.447.
		{"throughput", "mixed-50, mixed-90: redisson fastest, writer-preferring 0.89×, phase-fair 0.45× (grants/s over the fastest policy's, geometric mean)"},
		{"fairness cost", "contended, 2 Clients: fastest peer redislock 2000 grants/s (jain 0.40, max wait 100ms); " +
			"phase-fair 0.50× (jain 0.99, max wait 3.0ms); redisson 0.45× (jain 0.97, max wait 5.0ms)"},
		{"overall", "phase-fair starved no class; starved: redisson (writers in reader-flood); writer-preferring (readers in writer-stream)"},
	}
	checkVerdict(t, got, want)

	// Swap: now phase-fair starves writers in the reader flood and
	// redisson starves nobody; no peer ran contended.
	bySc[1][0].Classes["writer"], bySc[1][2].Classes["writer"] = bySc[1][2].Classes["writer"], bySc[1][0].Classes["writer"]
	bySc[0] = bySc[0][:2]
	bySc[2][1].Classes["reader"] = fine(90, 1)
	got = verdictOf(scs, bySc, cts, time.Second)
	want = []verdictLine{
		{"reader-flood", "use redisson or writer-preferring (writer p99 15.0ms, 20.0ms); " +
			"phase-fair starves writers: 20.0% not granted within 1s, 3 timed out, max 1000ms"},
		{"writer-stream", "use phase-fair or redisson or writer-preferring (reader p99 20.0ms, 25.0ms, 90.0ms)"},
		want[2],
		{"fairness cost", "contended, 2 Clients: no peer library ran it to the end: nothing to compare against"},
		{"overall", "redisson, writer-preferring starved no class; starved: phase-fair (writers in reader-flood)"},
	}
	checkVerdict(t, got, want)

	// Every policy starves the exposed class.
	for _, r := range bySc[1] {
		r.Classes["writer"] = starvedClass(0.5, 2)
	}
	r := bySc[1][1].Classes["writer"]
	r.NotGrantedWithinBound = 0.1
	got = verdictOf(scs[1:2], bySc[1:2], cts, time.Second)
	if len(got) != 2 || !strings.HasPrefix(got[0].Text, "every policy starved writers; least: writer-preferring;") ||
		got[1].Text != "every policy starved a class: redisson (writers in reader-flood); writer-preferring (writers in reader-flood); phase-fair (writers in reader-flood)" {
		t.Errorf("all starved: %q", got)
	}
	// Nobody starves, but one policy's p99 is far behind the best (this
	// run's numbers: 1s window and bound, redis-server 7.0, 2 CPUs).
	flood := [][]result{{
		loopResult("redisson", 260, fine(646.8, 1), fine(6.6, 1)),
		loopResult("writer-preferring", 258, fine(22.3, 1), fine(7.6, 1)),
		loopResult("phase-fair", 259, fine(1.9, 1), fine(7.0, 1)),
	}}
	got = verdictOf(scs[1:2], flood, cts, time.Second)
	checkVerdict(t, got, []verdictLine{
		{"reader-flood", "use phase-fair or writer-preferring (writer p99 1.9ms, 22.3ms); redisson keeps writers waiting: p99 646.8ms, 340× phase-fair's"},
		{"overall", "redisson, writer-preferring, phase-fair starved no class; p99 over 10× the best: redisson (writers in reader-flood)"},
	})
	// Nothing the verdict reads ran.
	if got := verdictOf(verdictScenarios(t, "handoff"), [][]result{nil}, cts, time.Second); len(got) != 0 {
		t.Errorf("handoff only: %q", got)
	}
}

func checkVerdict(t *testing.T, got, want []verdictLine) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("verdict of %d lines, want %d:\n%q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
	for _, l := range verdictText(got) {
		if n := len([]rune(l)); n > maxColumns {
			t.Errorf("verdict line of %d runes: %s", n, l)
		}
	}
}
