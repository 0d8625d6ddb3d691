package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
)

// scaleSample is what every node, and this process, report of their work
// so far.
type scaleSample struct {
	cpu     []time.Duration // per node: used_cpu_user + used_cpu_sys
	scripts []int64         // per node: EVALSHA + EVAL calls
	reads   []int64         // per node: total_reads_processed (read calls on client sockets)
	client  time.Duration   // this process's CPU time; -1 if unknown
	machine time.Duration   // every CPU's busy time; -1 if unknown
}

func (t *scaleTopology) sample(b *testing.B) scaleSample {
	b.Helper()
	s := scaleSample{client: processCPU(), machine: machineCPU()}
	for _, n := range t.nodes {
		info := t.info(b, n, "cpu", "stats", "commandstats")
		reads, _ := strconv.ParseInt(redisinfo.Field(info, "total_reads_processed"), 10, 64)
		s.cpu = append(s.cpu, redisinfo.CPU(info))
		s.scripts = append(s.scripts, redisinfo.ParseCommandStats(info).Scripts())
		s.reads = append(s.reads, reads)
	}
	return s
}

// report reports the metrics of BenchmarkScaleOut's doc from two samples
// around the measured loop.
func (t *scaleTopology) report(b *testing.B, before, after scaleSample) {
	wall := b.Elapsed()
	if wall <= 0 || b.N == 0 {
		return
	}
	perOp := func(d time.Duration) float64 { return micros(d) / float64(b.N) }
	busy := func(d time.Duration) float64 { return float64(d) / float64(wall) }
	var primary, replica, busiest time.Duration
	var scripts, most, reads int64
	for i, n := range t.nodes {
		cpu := after.cpu[i] - before.cpu[i]
		if !n.primary {
			replica += cpu
			continue
		}
		primary += cpu
		busiest = max(busiest, cpu)
		calls := after.scripts[i] - before.scripts[i]
		scripts += calls
		most = max(most, calls)
		reads += after.reads[i] - before.reads[i]
	}
	b.ReportMetric(perOp(primary+replica), "redis-cpu-µs/op")
	b.ReportMetric(perOp(primary), "primary-cpu-µs/op")
	b.ReportMetric(perOp(replica), "replica-cpu-µs/op")
	b.ReportMetric(busy(primary+replica), "redis-cpus")
	b.ReportMetric(busy(busiest), "max-primary-busy")
	if before.client >= 0 && after.client >= 0 {
		b.ReportMetric(perOp(after.client-before.client), "client-cpu-µs/op")
		b.ReportMetric(busy(after.client-before.client), "client-cpus")
	}
	if t.own && min(before.client, after.client, before.machine, after.machine) >= 0 {
		others := after.machine - before.machine - (after.client - before.client) - primary - replica
		b.ReportMetric(max(busy(others), 0), "other-cpus")
	}
	b.ReportMetric(float64(scripts)/float64(b.N), "scripts/op")
	if scripts > 0 && reads > 0 {
		b.ReportMetric(float64(most)/float64(scripts), "max-shard-share")
		b.ReportMetric(float64(scripts)/float64(reads), "scripts/read")
	}
}

// processCPU returns this process's CPU time (user and system, all threads)
// from /proc/self/stat, or -1 where there is none. The kernel counts it in
// ticks of 10 ms (USER_HZ is 100 on every Linux platform Go supports).
func processCPU() time.Duration {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3 of proc(5), utime 14 and stime 15.
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return -1
	}
	f := strings.Fields(string(stat[end+1:]))
	if len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// machineCPU returns the time every CPU of the machine spent busy (user,
// nice, system, irq and softirq; not idle, iowait or steal) from
// /proc/stat, or -1 where there is none. Same 10 ms ticks.
func machineCPU() time.Duration {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return -1
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system _idle _iowait irq softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
