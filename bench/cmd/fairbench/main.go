// Command fairbench compares fairrw's policies (Redisson, writer-preferring,
// phase-fair) and the Go lock libraries people use today (rueidislock,
// bsm/redislock, go-redsync/redsync: exclusive locks, so they run the
// write-only scenarios) on the same Redis in one run, with the metrics of
// shared/docs/measuring.md: per-class waits (p50/p90/p99/max, timed-out
// requests counted at their timeout), writer starvation, Jain's index and
// min/mean/max grants per worker, overtakes, handoff latency per wake-up
// path, Redis calls per grant (INFO commandstats), grants/s, and the
// watchdog's cost per renewal round. Its contended scenarios (8 writers
// on one name, on 1, 2 or 4 clients) also put every contender's grants/s
// beside the fastest peer's, with Jain's index and the waits on the same
// row: what barging buys the peers. Its cohort-yield scenario measures what
// a writer of another client waits for behind one client's stream of
// writes, in ms and in holds of the stream; where cohorts change who is
// granted next, the fair policies also run with fairrw.WithCohorts(false).
// Its server-cost scenario measures what a lock+unlock costs the server:
// Redis main-thread CPU, commands and scripts per uncontended cycle
// (writes, and reads for the policies) and per contended grant, and
// uncontended cycles/s, for every contender and
// fairrw's Mutex, next to two bare script pairs measured in the same run
// (HGET/HSET/PEXPIRE then HEXISTS/DEL/PUBLISH, and SET then DEL), with
// fairbench's own CPU per cycle beside them. It ends with a verdict
// computed from the run's numbers: which policy for which workload, the
// cost of fairness against the fastest peer, and the server's cost against
// the bare pair.
//
// Usage:
//
//	go run ./bench/cmd/fairbench [-full] [-scenarios a,b] [-contenders a,b]
//	    [-duration 1s] [-reps 1] [-bound 1s] [-timeout 0] [-wide]
//	    [-out fairbench-out] [-json results.json]
//	    [-addr host:port | -redis auto|server|miniredis]
//
// The default set takes about two minutes on two CPUs: every
// scenario but queue-cost once, with a 1s window (the first go run also
// compiles, for about a minute more). -full runs every scenario,
// queue-cost included, with 5s windows three times and reports medians
// (about twenty-five minutes); -scenarios queue-cost runs it alone.
//
// Redis: -addr uses an existing server (nothing is flushed; each run uses
// fresh lock names). Otherwise fairbench starts redis-server from PATH on a
// free loopback port without persistence and kills it on exit; when none is
// installed (or with -redis miniredis) it uses an in-process miniredis and
// says so (rueidislock, which needs client tracking, cannot run there).
//
// Progress goes to stderr, the tables to stdout (within 120 columns; -wide
// adds every percentile and cost column), charts (SVG and PNG, with an
// index.html to open first) to the -out folder. A run (one scenario by one
// contender) that fails, or passes its time limit (-timeout), is reported
// under its scenario and skipped, and a contender that stalls is skipped
// in the scenarios after: every other run is still printed and charted,
// and the verdict names what was skipped. A peer library's failures leave
// the exit status 0; a failure of fairrw's own (a policy, a baseline pair)
// makes it non-zero, as being interrupted does (Ctrl-C prints the runs
// that ended).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/contender"
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

// options are the parsed command line.
type options struct {
	addr, redisKind string
	scenarios       []scenario
	contenders      []contender.Contender
	window, bound   time.Duration
	reps            int
	out, jsonPath   string
	// minHandoffs is how many handoffs a handoff run collects at least,
	// even past its window (a polling peer hands off every ~100ms).
	minHandoffs int
	// leases overrides the renewal scenario's fan-outs.
	leases []int
	// timeout, if > 0, replaces every scenario's time limit per run.
	timeout time.Duration
	// renewalLease is the lease of the renewal scenario's holds.
	renewalLease time.Duration
	// wide prints the wide tables.
	wide bool
}

// run is fairbench with its command-line arguments (without the program
// name), over every contender.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, allContenders(), stdout, stderr)
}

// allContenders are the contenders fairbench knows: contender.All, then
// the Extras, which run in server-cost only, and the fair policies with
// cohorts off, which run where cohorts change who is granted next
// (scenario.runs).
func allContenders() []contender.Contender {
	return slices.Concat(contender.All(), contender.Extras(), contender.CohortsOff())
}

// runWith is run over the contenders all (-contenders picks among them).
// Whatever fails or stalls, every run that ended is printed and charted;
// the error then says how many did not.
func runWith(ctx context.Context, args []string, all []contender.Contender, stdout, stderr io.Writer) (err error) {
	opt, err := parseFlags(args, all, stderr)
	if err != nil {
		return err
	}
	r, err := startRedis(opt.addr, opt.redisKind, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if serr := r.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stop redis: %w", serr)
		}
	}()
	if err := r.connect(ctx); err != nil {
		return err
	}
	if r.Kind == kindMiniredis {
		fmt.Fprintf(stderr, "fairbench: Redis is an in-process miniredis at %s\n", r.Addr)
	} else {
		fmt.Fprintf(stderr, "fairbench: Redis is %s %s at %s\n", r.Kind, r.Version, r.Addr)
	}
	rep := newReport(opt, args, r)
	bySc := runAll(ctx, r, opt, rep, stderr)
	setPeerRatios(opt.scenarios, bySc, opt.contenders, rep.Results)
	verdict := verdictOf(opt.scenarios, bySc, opt.contenders, opt.bound)
	if l, ok := skippedVerdict(rep.Failures, opt.contenders); ok {
		verdict = append(verdict, l)
	}
	if err := writeText(stdout, rep, opt, bySc, verdict); err != nil {
		return err
	}
	if opt.out != "" {
		files, err := writeFigures(opt.out, opt.scenarios, bySc, slotsOf(all), verdictText(verdict))
		if err != nil {
			return fmt.Errorf("charts: %w", err)
		}
		fmt.Fprintf(stderr, "fairbench: %d charts written to %s: open %s first\n",
			len(files)-1, opt.out, filepath.Join(opt.out, indexFile))
	}
	if opt.jsonPath != "" {
		if err := writeJSON(opt.jsonPath, rep); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
		fmt.Fprintf(stderr, "fairbench: results written to %s\n", opt.jsonPath)
	}
	switch ours := oursFailed(rep.Failures, opt.contenders); {
	case rep.Interrupted:
		return fmt.Errorf("interrupted: the results above are those of the runs that ended: %w", ctx.Err())
	case ours > 0:
		return fmt.Errorf("%d run(s) of fairrw's own failed or stalled (listed above, under their scenario); the others are reported", ours)
	}
	// A peer library's runs that failed or stalled were reported, skipped
	// and named in the verdict: the run measured what it could.
	return nil
}

// oursFailed counts the failures of runs of fairrw's own: its contenders
// and the baseline pairs (server-cost). A peer library's failure is the
// peer's, not the run's.
func oursFailed(failures []failure, cts []contender.Contender) int {
	n := 0
	for _, f := range failures {
		if !isPeer(f.Contender, cts) {
			n++
		}
	}
	return n
}

// isPeer reports whether name is a contender of cts from another library
// than fairrw.
func isPeer(name string, cts []contender.Contender) bool {
	for _, c := range cts {
		if c.Name == name {
			return c.Library != "fairrw"
		}
	}
	return false // a baseline pair
}

// newReport starts the report of a run: its settings, machine, Redis and
// contenders.
func newReport(opt *options, args []string, r *redisEnv) *report {
	rep := &report{
		Settings: settings{
			DurationS: opt.window.Seconds(), BoundMS: msOf(opt.bound), Repetitions: opt.reps,
			Started: time.Now().Format(time.RFC3339),
			Command: strings.TrimSpace("go run ./bench/cmd/fairbench " + strings.Join(args, " ")),
		},
		Machine: thisMachine(),
		Redis:   r,
	}
	for _, s := range opt.scenarios {
		rep.Settings.Scenarios = append(rep.Settings.Scenarios, s.name)
	}
	for _, c := range opt.contenders {
		rep.Settings.Contenders = append(rep.Settings.Contenders, c.Name)
		rep.Contenders = append(rep.Contenders, contenderInfo{Name: c.Name, Library: c.Library, Reads: c.Reads, Wake: c.Wake, Settings: c.Settings})
	}
	return rep
}

// writeText prints the report: header, one section per scenario (with its
// failed runs), the legend and the verdict.
func writeText(w io.Writer, rep *report, opt *options, bySc [][]result, verdict []verdictLine) error {
	writeHeader(w, rep, opt.wide)
	for i, s := range opt.scenarios {
		if err := writeScenario(w, s, bySc[i], rep.Failures, opt.wide); err != nil {
			return err
		}
	}
	writeLegend(w, opt.wide)
	writeVerdict(w, verdict)
	return nil
}

// parseFlags parses the command line; every error is a usageError (or
// flag.ErrHelp).
func parseFlags(args []string, all []contender.Contender, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("fairbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		opt         options
		scenarioArg = fs.String("scenarios", defaultScenarioNames(), "comma-separated scenarios to run (-full adds "+optionalScenarioNames()+")")
		contendArg  = fs.String("contenders", contenderNames(all), "comma-separated contenders to run")
		full        = fs.Bool("full", false, "the full set: every scenario, -duration 5s -reps 3 unless given")
		leasesArg   = fs.String("leases", "", "comma-separated fan-outs of the renewal scenario (default 1000,10000)")
	)
	fs.IntVar(&opt.minHandoffs, "min-handoffs", 20, "handoffs a handoff run collects at least, even past its window")
	fs.StringVar(&opt.addr, "addr", "", "use the Redis at host:port instead of starting one")
	fs.StringVar(&opt.redisKind, "redis", "auto", "without -addr: auto (redis-server from PATH, else miniredis), server or miniredis")
	fs.DurationVar(&opt.window, "duration", time.Second, "window of each closed-loop and handoff run, also each request's timeout")
	fs.IntVar(&opt.reps, "reps", 1, "repetitions of every run; the tables show medians")
	fs.DurationVar(&opt.bound, "bound", time.Second, "starvation bound: report the share of requests not granted within it")
	fs.StringVar(&opt.out, "out", "fairbench-out", "folder for the charts (SVG and PNG); empty for none")
	fs.StringVar(&opt.jsonPath, "json", "", "also write every result as JSON to this file")
	fs.DurationVar(&opt.timeout, "timeout", 0, "time limit of each run (one scenario by one contender), past which the contender\n"+
		"is reported as stalled and skipped; 0 for each scenario's own (20s + 3 windows for a closed loop)")
	fs.DurationVar(&opt.renewalLease, "renewal-lease", time.Second, "lease of the renewal scenario's holds (fairrw renews every third of it)")
	fs.BoolVar(&opt.wide, "wide", false, "print the wide tables (every percentile and cost column; over 120 columns)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *full {
		if !set["duration"] {
			opt.window = 5 * time.Second
		}
		if !set["reps"] {
			opt.reps = 3
		}
		if !set["scenarios"] {
			*scenarioArg = scenarioNames()
		}
	}
	if opt.window <= 0 || opt.bound <= 0 || opt.reps < 1 || opt.minHandoffs < 1 || opt.timeout < 0 {
		return nil, usageError{errors.New("-duration and -bound must be positive, -timeout not negative, -reps and -min-handoffs at least 1")}
	}
	for f := range strings.SplitSeq(*leasesArg, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, usageError{fmt.Errorf("-leases: %q is not a positive number", f)}
		}
		opt.leases = append(opt.leases, n)
	}
	switch opt.redisKind {
	case "auto", "server", "miniredis":
	default:
		return nil, usageError{fmt.Errorf("-redis %q: want auto, server or miniredis", opt.redisKind)}
	}
	var err error
	if opt.scenarios, err = pickScenarios(*scenarioArg); err != nil {
		return nil, usageError{err}
	}
	if opt.contenders, err = pickContenders(*contendArg, all); err != nil {
		return nil, usageError{err}
	}
	return &opt, nil
}

// runOne runs scenario s by contender ct once (repetition rep).
func runOne(ctx context.Context, r *redisEnv, s scenario, ct contender.Contender, name string, rep int, opt *options) (result, error) {
	switch s.kind {
	case handoff:
		o, err := runHandoff(ctx, r, ct, name, s.oneClient, opt.window, opt.minHandoffs)
		if err != nil {
			return result{}, err
		}
		return summarizeHandoff(s, ct.Name, rep, o), nil
	case renewal:
		res := result{Scenario: s.name, Contender: ct.Name, Rep: rep}
		start := time.Now()
		fanouts := s.leases
		if opt.leases != nil {
			fanouts = opt.leases
		}
		for _, n := range fanouts {
			o, err := runRenewal(ctx, r, ct, fmt.Sprintf("%s:%d", name, n), n, opt.renewalLease)
			if err != nil {
				return result{}, fmt.Errorf("%d leases: %w", n, err)
			}
			res.Renewal = append(res.Renewal, o)
		}
		res.ElapsedS = time.Since(start).Seconds()
		return res, nil
	case queueCost:
		return runQueueCost(ctx, r, s, ct, name, rep, opt)
	case serverCost:
		return runServerCost(ctx, r, s, ct, name, rep, opt)
	case arrival:
		start := time.Now()
		o, err := runArrival(ctx, r, s, ct, name, opt.window)
		if err != nil {
			return result{}, err
		}
		return result{Scenario: s.name, Contender: ct.Name, Rep: rep, WindowS: opt.window.Seconds(),
			ElapsedS: time.Since(start).Seconds(), Arrival: o}, nil
	}
	o, err := runLoop(ctx, r, s, ct, name, opt.window)
	if err != nil {
		return result{}, err
	}
	return summarizeLoop(s, ct.Name, rep, o, opt.bound), nil
}

// progressNote says how much a run measured, for the progress line.
func progressNote(res result) string {
	switch {
	case res.Handoff != nil:
		return fmt.Sprintf(" (%d handoffs)", len(res.handoffs))
	case res.Renewal != nil:
		return ""
	case res.ServerCost != nil:
		return res.ServerCost.progress()
	case res.Arrival != nil:
		return fmt.Sprintf(" (%d arrivals)", res.Arrival.Arrivals)
	case res.Queue != nil:
		var parts []string
		for _, q := range res.Queue {
			parts = append(parts, fmt.Sprintf("%d writers: %d requests", q.Writers, q.Requests))
		}
		return " (" + strings.Join(parts, "; ") + ")"
	}
	n := 0
	for _, c := range res.Classes {
		n += c.Requests
	}
	return fmt.Sprintf(" (%d requests)", n)
}

// connect opens the client fairbench reads INFO with (not on miniredis,
// which has no commandstats) and learns the server's version.
func (r *redisEnv) connect(ctx context.Context) error {
	opt := r.option
	opt.DisableCache = true
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", r.Addr, err)
	}
	if r.Kind == kindMiniredis {
		rdb.Close()
		return nil
	}
	r.raw = rdb
	stop := r.stop
	r.stop = func() error {
		rdb.Close()
		return stop()
	}
	r.Version = serverVersion(ctx, rdb)
	return nil
}
