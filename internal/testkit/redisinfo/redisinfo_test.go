package redisinfo

import (
	"testing"
	"time"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_eval:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_fcall:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=9,usec=900,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
	got := ParseCommandStats(info)
	if got["evalsha"] != (CmdStat{Calls: 3, Usec: 40}) || got["eval"] != (CmdStat{Calls: 2, Usec: 10}) || got["info"].Calls != 9 {
		t.Fatalf("ParseCommandStats = %+v", got)
	}
	if n := got.Scripts(); n != 6 {
		t.Fatalf("Scripts = %d, want 6", n)
	}
	if n := got.Commands("info"); n != 10 {
		t.Fatalf("Commands(info) = %d, want 3+2+1+4 = 10", n)
	}
	before := Stats{"evalsha": {Calls: 1, Usec: 10}, "gone": {Calls: 7}}
	d := got.Sub(before)
	if d["evalsha"] != (CmdStat{Calls: 2, Usec: 30}) || d["set"].Calls != 4 {
		t.Fatalf("Sub = %+v", d)
	}
}

func TestField(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"
	if got := Field(info, "redis_version"); got != "7.0.15" {
		t.Fatalf("Field(redis_version) = %q", got)
	}
	if got := Field(info, "absent"); got != "" {
		t.Fatalf("Field(absent) = %q, want empty", got)
	}
}

func TestCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\n" +
		"used_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\n" +
		"used_cpu_sys_main_thread:1.400000\r\n"
	if got, want := CPU(info), 3750*time.Millisecond; got != want {
		t.Fatalf("CPU = %v, want %v", got, want)
	}
}
