package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/bench/internal/contender"
	"github.com/fairrw/rwlock/internal/testkit/fairness"
)

// fakeContender is a contender whose every handle is made by mutex: a
// library that fails or stalls, for the runner's tests.
func fakeContender(name string, mutex func() contender.Mutex) contender.Contender {
	return contender.Contender{
		Name: name, Library: "fake", Reads: true, Wake: "never",
		Open: func(rueidis.ClientOption) (contender.Client, error) { return fakeClient{mutex}, nil },
	}
}

type fakeClient struct{ mutex func() contender.Mutex }

func (c fakeClient) Mutex(string) contender.Mutex { return c.mutex() }
func (fakeClient) Close()                         {}

// brokenMutex grants its first request (the warm-up) and fails every
// other: a library that breaks in the middle of a run.
type brokenMutex struct{ asked atomic.Int32 }

var errBroken = errors.New("fake: connection reset by peer")

func (m *brokenMutex) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	if m.asked.Add(1) == 1 {
		return fakeHold{}, nil
	}
	return nil, errBroken
}

func (m *brokenMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	return m.Acquire(ctx, class)
}

func (*brokenMutex) Owner() string { return "broken" }

type fakeHold struct{}

func (fakeHold) Unlock(context.Context) error { return nil }
func (fakeHold) WokenBy() string              { return "" }

// stallingMutex blocks every request until released ends, whatever its
// own context: a library that hangs and ignores cancellation.
type stallingMutex struct {
	released context.Context
	stalls   *stalls
}

// stalls counts the stalled requests, for the test to wait for their end.
type stalls struct {
	entered atomic.Int32
	exited  chan struct{} // one send per request, buffered
}

// wait returns once every request that entered has returned.
func (s *stalls) wait() {
	for range s.entered.Load() {
		<-s.exited
	}
}

func (m stallingMutex) Acquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	m.stalls.entered.Add(1)
	defer func() { m.stalls.exited <- struct{}{} }()
	<-m.released.Done()
	return nil, errors.New("fake: released")
}

func (m stallingMutex) TryAcquire(ctx context.Context, class fairness.Class) (fairness.Hold, error) {
	return m.Acquire(ctx, class)
}

func (stallingMutex) Owner() string { return "stalling" }

// TestFailingAndStallingContenders runs two scenarios on miniredis with
// a real contender, and two peers, one that fails mid-run and one that
// stalls ignoring its context: the run must print and chart the real
// contender's results in both, report the failure in each scenario,
// report the stall once (after its time limit) and skip the stalled
// contender after it, write the failures to the JSON, fit 120 columns,
// say in the verdict what was skipped, and end without an error (exit
// status 0): a peer's failure is the peer's, and the run measured what it
// could.
func TestFailingAndStallingContenders(t *testing.T) {
	released, release := context.WithCancel(context.Background())
	st := &stalls{exited: make(chan struct{}, 100)}
	t.Cleanup(func() {
		release()
		st.wait() // the abandoned run's requests end: no leak
	})
	all := []contender.Contender{
		contender.Policies()[2], // phase-fair
		fakeContender("broken", func() contender.Mutex { return new(brokenMutex) }),
		fakeContender("stalling", func() contender.Mutex { return stallingMutex{released, st} }),
	}
	dir := t.TempDir()
	charts, path := filepath.Join(dir, "charts"), filepath.Join(dir, "results.json")
	var out, errOut bytes.Buffer
	start := time.Now()
	// A time limit of 3 s: phase-fair's run of 200 ms outlasted 1 s once,
	// with two suites side by side and other work beside them.
	err := runWith(context.Background(), []string{"-redis", "miniredis", "-duration", "200ms", "-timeout", "3s",
		"-scenarios", "contended,reader-flood", "-out", charts, "-json", path}, all, &out, &errOut)
	elapsed := time.Since(start)
	stdout, stderr := out.String(), errOut.String()
	if err != nil {
		t.Errorf("err = %v, want none: only peers failed or stalled", err)
	}
	verdict := stdout[strings.Index(stdout, "\n== verdict"):]
	for _, want := range []string{"skipped", "stalling stalled in contended", "sat out the scenarios after", "broken failed in contended", "broken failed in reader-flood"} {
		if !strings.Contains(strings.Join(strings.Fields(verdict), " "), want) {
			t.Errorf("the verdict does not say %q:\n%s", want, verdict)
		}
	}
	t.Logf("the run took %v", elapsed)
	others := map[string]bool{}
	for _, c := range allContenders() {
		others[c.Name] = c.Name != "phase-fair"
	}
	checkTables(t, stdout, others, "contended", "reader-flood")
	checkWidth(t, stdout)
	for _, sc := range []string{"contended", "reader-flood"} {
		sec := section(stdout, sc)
		if !strings.Contains(sec, "phase-fair") || !strings.Contains(sec, "broken: "+sc+" failed after") || !strings.Contains(sec, errBroken.Error()) {
			t.Errorf("%s: no phase-fair row or no failure of broken:\n%s", sc, sec)
		}
	}
	if sec := section(stdout, "contended"); !strings.Contains(sec, "stalling: contended stalled after") || !strings.Contains(sec, errAbandoned.Error()) {
		t.Errorf("contended: the stall is not reported:\n%s", sec)
	}
	if strings.Contains(section(stdout, "reader-flood"), "stalling") || !strings.Contains(stderr, "reader-flood / stalling: skipped: it stalled in contended") {
		t.Errorf("the stalled contender was not skipped after its stall:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if !strings.Contains(stdout, "\n== verdict") || !strings.Contains(stdout, "\nreader-flood   ") {
		t.Errorf("no verdict on phase-fair's reader flood:\n%s", stdout)
	}
	for _, f := range []string{"contended-throughput.svg", "reader-flood-writer-tail.png", indexFile} {
		if _, err := os.Stat(filepath.Join(charts, f)); err != nil {
			t.Errorf("chart: %v", err)
		}
	}
	checkIndex(t, charts)
	var rep struct {
		Results  []result  `json:"results"`
		Failures []failure `json:"failures"`
	}
	readJSON(t, path, &rep)
	if len(rep.Results) != 2 || len(rep.Failures) != 3 {
		t.Fatalf("%d results and %d failures, want 2 and 3: %+v", len(rep.Results), len(rep.Failures), rep.Failures)
	}
	for _, f := range rep.Failures {
		if f.Stalled != (f.Contender == "stalling") || f.Rep != 1 || f.Error == "" {
			t.Errorf("failure %+v", f)
		}
		// The stall costs its limit (-timeout 3s) and a grace of as long,
		// once, counted from its run's start: judged there, not on the
		// whole run's time, which is two scenarios and their charts and
		// took 3 s alone, 16 s on a busy machine and 73 s with two suites
		// side by side. The allowance covers a run's start (the contender's
		// Clients) and timers run late on a loaded machine; a stall waited
		// for without limit is far past it.
		if limit, grace, allowance := 3*time.Second, 3*time.Second, 5*time.Second; f.Stalled && f.AfterS > (limit+grace+allowance).Seconds() {
			t.Errorf("the stall of %s was abandoned %.1fs after its run began, want at most its limit %v, a grace of %v and %v", f.Contender, f.AfterS, limit, grace, allowance)
		}
	}
}

// TestOwnFailureExitsNonZero: a run of fairrw's own that fails (a policy:
// a contender of the library "fairrw") makes the command end with an
// error (exit status 1), and the verdict names it as fairrw's own.
func TestOwnFailureExitsNonZero(t *testing.T) {
	broken := fakeContender("broken-policy", func() contender.Mutex { return new(brokenMutex) })
	broken.Library = "fairrw"
	all := []contender.Contender{contender.Policies()[2], broken}
	var out, errOut bytes.Buffer
	err := runWith(context.Background(), []string{"-redis", "miniredis", "-duration", "200ms", "-timeout", "5s",
		"-scenarios", "contended", "-out", ""}, all, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "1 run(s) of fairrw's own failed or stalled") {
		t.Errorf("err = %v, want one run of fairrw's own failed", err)
	}
	if verdict := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(verdict, "broken-policy (fairrw's own) failed in contended") {
		t.Errorf("the verdict does not name the failure as fairrw's own:\n%s", out.String())
	}
}

// TestGuarded checks the time limit of one run: a result in time passes;
// an error after the limit wraps errTimedOut; a run that ignores its
// context is abandoned after the grace; an error in time stays as it is.
func TestGuarded(t *testing.T) {
	ctx := context.Background()
	res, err := guarded(ctx, time.Second, func(context.Context) (result, error) { return result{Contender: "a"}, nil })
	if err != nil || res.Contender != "a" {
		t.Errorf("in time: %+v, %v", res, err)
	}
	_, err = guarded(ctx, 50*time.Millisecond, func(ctx context.Context) (result, error) {
		<-ctx.Done()
		return result{}, ctx.Err()
	})
	if !errors.Is(err, errTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the limit: %v", err)
	}
	release := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	_, err = guarded(ctx, 50*time.Millisecond, func(context.Context) (result, error) {
		defer close(done)
		<-release
		return result{}, nil
	})
	if !errors.Is(err, errAbandoned) || time.Since(start) < 100*time.Millisecond {
		t.Errorf("stalled: %v after %v, want errAbandoned after the limit and as long again", err, time.Since(start))
	}
	close(release)
	<-done
	_, err = guarded(ctx, time.Second, func(context.Context) (result, error) { return result{}, errBroken })
	if err != errBroken {
		t.Errorf("an error in time = %v, want it unwrapped", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = guarded(cctx, time.Second, func(ctx context.Context) (result, error) { return result{}, ctx.Err() })
	if errors.Is(err, errTimedOut) || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v, want context.Canceled and no time limit", err)
	}
}
