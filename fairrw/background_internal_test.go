package fairrw

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestBoundedReturnsAtCtxEnd: a call bounded by ctx returns ctx's error as
// soon as ctx ends, while the work goes on on a goroutine of the Client's,
// which Shutdown waits for and Close stops.
func TestBoundedReturnsAtCtxEnd(t *testing.T) {
	c := &Client{background: newTasks()}
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
	c.background.close()
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
	ts.close()
	select {
	case <-stopped:
	default:
		t.Fatal("close returned before its task stopped")
	}
}

// TestHoldMillis: a hold's time on the wire is rounded up and carries
// LeaseMargin, so Redis never ends it before the Lease's Deadline.
func TestHoldMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "5"},
		{time.Microsecond, "6"},
		{time.Millisecond, "6"},
		{1500 * time.Microsecond, "7"},
		{30 * time.Second, "30005"},
		{30*time.Second + time.Nanosecond, "30006"},
	} {
		if got := holdMillis(c.d); got != c.want {
			t.Errorf("holdMillis(%v) = %s, want %s", c.d, got, c.want)
		}
	}
}
