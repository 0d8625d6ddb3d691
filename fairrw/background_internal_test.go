package fairrw

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestBoundedReturnsAtCtxEnd: a call bounded by ctx returns ctx's error as
// soon as ctx ends, while the work goes on on a goroutine of the Client's,
// which Shutdown waits for and Close stops.
func TestBoundedReturnsAtCtxEnd(t *testing.T) {
	c := &Client{background: newTasks(), tel: silentTelemetry(t)}
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := bounded(c, ctx, func(context.Context) (int, error) {
		<-release // a command stuck in the client library
		return 1, nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bounded = %v, want the ctx's deadline", err)
	}
	if late := time.Since(start) - 20*time.Millisecond; late > 500*time.Millisecond {
		t.Fatalf("bounded returned %v after its deadline", late)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if err := c.background.wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with the work under way = %v, want the ctx's deadline", err)
	}
	close(release)
	if err := c.background.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A ctx that cannot end runs the call in the caller's goroutine.
	v, err := bounded(c, context.Background(), func(context.Context) (int, error) { return 2, nil })
	if v != 2 || err != nil {
		t.Fatalf("bounded = %d, %v", v, err)
	}
	c.background.close(false)
	if c.background.run(func(context.Context) {}) {
		t.Fatal("a task started after close")
	}
	// After close, bounded runs the call itself.
	v, err = bounded(c, ctx, func(context.Context) (int, error) { return 3, nil })
	if v != 3 || err != nil {
		t.Fatalf("bounded after close = %d, %v", v, err)
	}
}

// TestTasksCloseStopsThem: close cancels the tasks' context and waits.
func TestTasksCloseStopsThem(t *testing.T) {
	ts := newTasks()
	stopped := make(chan struct{})
	ts.run(func(ctx context.Context) {
		<-ctx.Done()
		close(stopped)
	})
	ts.close(false)
	select {
	case <-stopped:
	default:
		t.Fatal("close returned before its task stopped")
	}
}

// TestWorkersNotHeadOfLine: a worker stuck in a call whose caller has gone
// is never handed the next call, so calls made meanwhile, one after the
// other and many at once, each get their own answer well before their
// deadline; idle workers end after workerIdle, and close waits for the
// stuck one.
func TestWorkersNotHeadOfLine(t *testing.T) {
	base := runtime.NumGoroutine()
	c := &Client{background: newTasks(), tel: silentTelemetry(t)}
	block := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := bounded(c, ctx, func(context.Context) (int, error) { <-block; return 0, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stuck call = %v, want the ctx's deadline", err)
	}
	call := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		v, err := bounded(c, ctx, func(context.Context) (int, error) { return i, nil })
		if err != nil || v != i {
			return fmt.Errorf("call %d = %d, %v: handed to a busy worker?", i, v, err)
		}
		return nil
	}
	for i := range 200 {
		if err := call(i); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 200)
	for i := range 200 {
		go func() { errs <- call(i) }()
	}
	for range 200 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	settled := func(want int) bool {
		for end := time.Now().Add(workerIdle + 3*time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if runtime.NumGoroutine() <= want {
				return true
			}
		}
		return false
	}
	if !settled(base + 1) { // the stuck worker alone
		t.Fatalf("%d goroutines %v after the calls, %d before: idle workers did not end", runtime.NumGoroutine(), workerIdle, base)
	}
	close(block)
	c.background.close(false)
	if !settled(base) { // a worker may still be on its way out after close
		t.Fatalf("%d goroutines after close, %d before", runtime.NumGoroutine(), base)
	}
}

// TestCallsAreNotBackgroundWork: a Redis call run on the tasks' goroutines
// (bounded) is not background work: while it runs, or just after its
// caller had its answer, wait (what Shutdown checks before it closes)
// finds nothing under way; a background task it does wait for. A Shutdown
// with a cancelled ctx right after an Unlock reported work left undone
// when the call's goroutine had not yet counted itself out.
func TestCallsAreNotBackgroundWork(t *testing.T) {
	tk := newTasks()
	defer tk.close(false)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	release := make(chan struct{})
	call := taskFunc(func(context.Context) { <-release })
	if !tk.start(call, false) {
		t.Fatal("start refused a call")
	}
	if err := tk.wait(cancelled); err != nil {
		t.Fatalf("wait while a call runs: %v, want nil (a call is not background work)", err)
	}
	close(release)

	hold := make(chan struct{})
	if !tk.run(func(context.Context) { <-hold }) {
		t.Fatal("run refused a task")
	}
	if err := tk.wait(cancelled); err == nil {
		t.Fatal("wait while a background task runs: nil, want ctx's error")
	}
	close(hold)
	done, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := tk.wait(done); err != nil {
		t.Fatalf("wait after the task ended: %v", err)
	}
}
