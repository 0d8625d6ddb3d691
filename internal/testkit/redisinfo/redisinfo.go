// Package redisinfo parses what Redis says about its own work in INFO:
// command statistics (the Redis cost per grant of measuring.md), CPU time
// and single fields. The benchmarks and fairbench share it.
package redisinfo

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// CmdStat is one command's line of INFO commandstats.
type CmdStat struct {
	Calls, Usec int64
}

// Stats is INFO commandstats by lower-case command name ("evalsha").
type Stats map[string]CmdStat

// Read reads INFO commandstats from rdb.
func Read(ctx context.Context, rdb rueidis.Client) (Stats, error) {
	info, err := rdb.Do(ctx, rdb.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	return ParseCommandStats(info), nil
}

// ParseCommandStats parses lines such as
// "cmdstat_evalsha:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=0";
// it skips every other line.
func ParseCommandStats(info string) Stats {
	stats := make(Stats)
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		name, ok = strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		var s CmdStat
		for field := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				s.Calls = n
			case "usec":
				s.Usec = n
			}
		}
		stats[name] = s
	}
	return stats
}

// scriptCommands run a Lua script or function.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// Scripts is the number of script calls Redis has run (EVAL, EVALSHA and
// their read-only and function forms).
func (s Stats) Scripts() int64 {
	var n int64
	for _, c := range scriptCommands {
		n += s[c].Calls
	}
	return n
}

// ScriptUsec is the time Redis spent inside script calls, in
// microseconds (commandstats' usec of EVAL, EVALSHA and their read-only
// and function forms, their inner commands included; reading, parsing
// and replying not).
func (s Stats) ScriptUsec() int64 {
	var n int64
	for _, c := range scriptCommands {
		n += s[c].Usec
	}
	return n
}

// Commands is the number of commands Redis has run except those named in
// skip (such as "info", the measurer's own). Commands that scripts run
// (redis.call) count too: Redis counts them in commandstats.
func (s Stats) Commands(skip ...string) int64 {
	var n int64
	for name, c := range s {
		if !contains(skip, name) {
			n += c.Calls
		}
	}
	return n
}

// Sub returns s minus before, command by command.
func (s Stats) Sub(before Stats) Stats {
	d := make(Stats, len(s))
	for name, c := range s {
		b := before[name]
		d[name] = CmdStat{Calls: c.Calls - b.Calls, Usec: c.Usec - b.Usec}
	}
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Field returns the value of one "key:value" line of INFO, or "".
func Field(info, key string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

// CPU sums used_cpu_user and used_cpu_sys (seconds) of INFO cpu: the
// redis-server process's CPU time.
func CPU(info string) time.Duration {
	var total time.Duration
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		if sec, err := strconv.ParseFloat(v, 64); err == nil {
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total
}
