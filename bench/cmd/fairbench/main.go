// Command fairbench compares fairrw's policies (Redisson, writer-preferring,
// phase-fair) on the same Redis in one run, with the fairness metrics of
// shared/docs/measuring.md: per-class waits (p50/p90/p99/max, timed-out
// requests counted at their timeout), writer starvation, Jain's index and
// min/mean/max grants per worker, overtakes, and grants/s.
//
// Usage:
//
//	go run ./bench/cmd/fairbench [-scenarios reader-flood,writer-burst,contended]
//	    [-duration 5s | -quick] [-bound 1s] [-addr host:port | -redis auto|server|miniredis]
//	    [-json results.json]
//
// Redis: -addr uses an existing server (nothing is flushed; each run uses
// fresh lock names). Otherwise fairbench starts redis-server from PATH on a
// free loopback port without persistence and kills it on exit; when none is
// installed (or with -redis miniredis) it uses an in-process miniredis and
// says so.
//
// Each scenario runs once per policy, for -duration (default 5s; -quick
// makes it 1s unless -duration is given), each on its own lock name.
// Progress goes to stderr, the tables to stdout. It exits non-zero on any
// lock error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "fairbench:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "fairbench:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ error }

// run is fairbench with its command-line arguments (without the program
// name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("fairbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr      = fs.String("addr", "", "use the Redis at host:port instead of starting one")
		redisKind = fs.String("redis", "auto", "without -addr: auto (redis-server from PATH, else miniredis), server or miniredis")
		list      = fs.String("scenarios", scenarioNames(), "comma-separated scenarios to run")
		duration  = fs.Duration("duration", 5*time.Second, "window of each scenario under each policy, also each request's timeout")
		quick     = fs.Bool("quick", false, "a smoke run: -duration 1s unless -duration is given")
		bound     = fs.Duration("bound", time.Second, "starvation bound: report the share of requests not granted within it")
		jsonPath  = fs.String("json", "", "also write every result as JSON to this file")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	durationSet := false
	fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
	if *quick && !durationSet {
		*duration = time.Second
	}
	if *duration <= 0 || *bound <= 0 {
		return usageError{errors.New("-duration and -bound must be positive")}
	}
	switch *redisKind {
	case "auto", "server", "miniredis":
	default:
		return usageError{fmt.Errorf("-redis %q: want auto, server or miniredis", *redisKind)}
	}
	picked, err := pickScenarios(*list)
	if err != nil {
		return usageError{err}
	}

	r, err := startRedis(*addr, *redisKind, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if serr := r.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stop redis: %w", serr)
		}
	}()
	if r.Version == "" {
		rdb, err := rueidis.NewClient(r.option)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", r.Addr, err)
		}
		r.Version = serverVersion(ctx, rdb)
		rdb.Close()
	}
	if r.Kind == kindMiniredis {
		fmt.Fprintf(stderr, "fairbench: Redis is an in-process miniredis at %s\n", r.Addr)
	} else {
		fmt.Fprintf(stderr, "fairbench: Redis is %s %s at %s\n", r.Kind, r.Version, r.Addr)
	}

	rep := &report{
		Settings: settings{
			DurationS: duration.Seconds(), BoundMS: msOf(*bound),
			Started: time.Now().Format(time.RFC3339),
		},
		Machine: thisMachine(),
		Redis:   r,
	}
	for _, s := range picked {
		rep.Settings.Scenarios = append(rep.Settings.Scenarios, s.name)
	}
	for _, pc := range policies {
		rep.Settings.Policies = append(rep.Settings.Policies, pc.name)
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	bySc := make([][]result, len(picked))
	for i, s := range picked {
		for _, pc := range policies {
			fmt.Fprintf(stderr, "%s / %s ... ", s.name, pc.name)
			name := "fairbench:" + runID + ":" + s.name + ":" + pc.name
			o, err := runScenario(ctx, r, s, pc, name, *duration)
			if err != nil {
				fmt.Fprintln(stderr, "failed")
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted during %s / %s: %w", s.name, pc.name, ctx.Err())
				}
				return fmt.Errorf("%s / %s: %w", s.name, pc.name, err)
			}
			fmt.Fprintf(stderr, "done in %.1fs (%d requests)\n", o.elapsed.Seconds(), o.rec.Len())
			res := summarize(s, pc, o, *bound)
			bySc[i] = append(bySc[i], res)
			rep.Results = append(rep.Results, res)
		}
	}

	writeHeader(stdout, rep)
	for i, s := range picked {
		if err := writeTable(stdout, s, bySc[i]); err != nil {
			return err
		}
	}
	writeLegend(stdout)
	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, rep); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
		fmt.Fprintf(stderr, "fairbench: results written to %s\n", *jsonPath)
	}
	return nil
}
