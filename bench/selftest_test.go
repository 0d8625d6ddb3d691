package bench

import (
	"testing"
	"time"
)

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
