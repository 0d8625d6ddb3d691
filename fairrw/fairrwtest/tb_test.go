package fairrwtest_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// recordingTB is a testing.TB whose Fatalf and Skipf end only the function
// run gives it, so that a test can check how the helpers fail another test.
type recordingTB struct {
	testing.TB // methods not overridden are the real test's

	mu       sync.Mutex
	failed   bool
	skipped  bool
	logs     []string
	cleanups []func()
}

// run calls fn with a fresh recordingTB on its own goroutine, as the testing
// package runs a test, then its cleanups, last registered first.
func run(t *testing.T, fn func(tb testing.TB)) *recordingTB {
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for _, f := range slices.Backward(r.cleanups) {
				f()
			}
		}()
		fn(r)
	}()
	<-done
	return r
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recordingTB) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

func (r *recordingTB) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.logs)
}
