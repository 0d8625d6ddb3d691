package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	us := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Microsecond
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one p50", us(7), 50, 7 * time.Microsecond},
		{"one p99", us(7), 99, 7 * time.Microsecond},
		// n=3: rank ceil(1.5)=2, ceil(2.97)=3, ceil(0.03)=1.
		{"three p50", us(1, 3, 5), 50, 3 * time.Microsecond},
		{"three p99", us(1, 3, 5), 99, 5 * time.Microsecond},
		{"three p1", us(1, 3, 5), 1, 1 * time.Microsecond},
		// n=4: p50 rank 2 (nearest rank does not average).
		{"four p50", us(10, 20, 30, 40), 50, 20 * time.Microsecond},
		{"four p75", us(10, 20, 30, 40), 75, 30 * time.Microsecond},
		{"four p76", us(10, 20, 30, 40), 76, 40 * time.Microsecond},
		// 1..100: the p-th percentile is p itself.
		{"hundred p50", us(hundred...), 50, 50 * time.Microsecond},
		{"hundred p99", us(hundred...), 99, 99 * time.Microsecond},
		{"hundred p100", us(hundred...), 100, 100 * time.Microsecond},
		// Negative samples (a waiter granted before the holder's Unlock returned) stay.
		{"negative", us(-4, 2, 9), 50, 2 * time.Microsecond},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v, %v) = %v, want %v", tc.name, tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_eval:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=9,usec=900,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"
	got := parseCommandStats(info)
	if got["evalsha"] != (cmdStat{calls: 3, usec: 40}) || got["eval"] != (cmdStat{calls: 2, usec: 10}) || got["info"].calls != 9 {
		t.Fatalf("parseCommandStats = %+v", got)
	}
	if n := scriptCalls(got); n != 5 {
		t.Fatalf("scriptCalls = %d, want 5", n)
	}
}

func TestWakePathsString(t *testing.T) {
	w := wakePaths{"pubsub": 3, "": 1, "timer": 2}
	if got, want := w.String(), `""=1 pubsub=3 timer=2`; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestParseCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\n" +
		"used_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n" +
		"used_cpu_sys_main_thread:1.400000\r\n"
	if got, want := parseCPU(info), 3750*time.Millisecond; got != want {
		t.Fatalf("parseCPU = %v, want %v", got, want)
	}
}
