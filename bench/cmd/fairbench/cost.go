package main

import (
	"context"
	"strconv"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
)

// cost is the Redis work of one run per grant, from INFO commandstats
// (measuring.md: the Redis cost per grant).
type cost struct {
	// ScriptsPerGrant counts script calls (EVALSHA, EVAL, FCALL): failed
	// attempts, grants, unlocks and renewals.
	ScriptsPerGrant float64 `json:"scripts_per_grant"`
	// CommandsPerGrant counts every command Redis ran except the
	// measurer's INFO, those that scripts ran included (Redis counts a
	// redis.call like a client's command): so it includes the PUBLISH of
	// a release, a SUBSCRIBE and a polling peer's every retry.
	CommandsPerGrant float64 `json:"commands_per_grant"`
	// RedisCPUUsecPerGrant is the redis-server process's CPU time (user +
	// system: commands, scripts, network I/O) per grant.
	RedisCPUUsecPerGrant float64 `json:"redis_cpu_usec_per_grant"`
}

// serverSample is what Redis said about its own work at one moment.
type serverSample struct {
	stats redisinfo.Stats
	cpu   time.Duration // the redis-server process's
	// main is the main thread's CPU (used_cpu_user_main_thread +
	// used_cpu_sys_main_thread, Redis 6.2 and later; 0 when not reported):
	// the thread that runs every command and script.
	main time.Duration
}

// sample reads INFO cpu and commandstats in one call; nil where the
// server has no commandstats (miniredis) or the call failed.
func (r *redisEnv) sample(ctx context.Context) *serverSample {
	if r.raw == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := r.raw.Do(ctx, r.raw.B().Info().Section("cpu", "commandstats").Build()).ToString()
	if err != nil {
		return nil
	}
	s := redisinfo.ParseCommandStats(info)
	if len(s) == 0 {
		return nil
	}
	return &serverSample{stats: s, cpu: redisinfo.CPU(info), main: mainThreadCPU(info)}
}

// mainThreadCPU sums used_cpu_user_main_thread and used_cpu_sys_main_thread
// (seconds) of INFO cpu; 0 when the server does not report them.
func mainThreadCPU(info string) time.Duration {
	var total time.Duration
	for _, k := range []string{"used_cpu_user_main_thread", "used_cpu_sys_main_thread"} {
		sec, err := strconv.ParseFloat(redisinfo.Field(info, k), 64)
		if err != nil {
			return 0
		}
		total += time.Duration(sec * float64(time.Second))
	}
	return total
}

// costOf returns the cost per grant between two readings, or nil without
// both readings or without grants.
func costOf(before, after *serverSample, grants int64) *cost {
	if before == nil || after == nil || grants <= 0 {
		return nil
	}
	d := after.stats.Sub(before.stats)
	g := float64(grants)
	return &cost{
		ScriptsPerGrant:      float64(d.Scripts()) / g,
		CommandsPerGrant:     float64(d.Commands("info")) / g,
		RedisCPUUsecPerGrant: float64((after.cpu-before.cpu)/time.Microsecond) / g,
	}
}
