package redistest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// FakeTB records Fatal, Skip and Error instead of acting on them, so that
// the failure paths of test helpers (skip or fail, cleanups) can be tested. TempDir, Logf, Helper and Name
// go to the real test.
type FakeTB struct {
	testing.TB

	mu       sync.Mutex
	fatal    string
	skip     string
	errs     []string
	cleanups []func()
}

func (f *FakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *FakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func (f *FakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skip = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *FakeTB) Skip(args ...any) { f.Skipf("%s", fmt.Sprint(args...)) }

func (f *FakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *FakeTB) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }

func (f *FakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}

// RunFake runs fn with a FakeTB in its own goroutine (Fatal/Skip end it with
// Goexit), then runs the registered cleanups, last first.
func RunFake(t *testing.T, fn func(tb testing.TB)) *FakeTB {
	t.Helper()
	f := &FakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	if len(f.errs) > 0 {
		t.Errorf("errors reported to the fake TB: %q", f.errs)
	}
	return f
}

// FatalMessage returns the message of the Fatal that ended fn, or "".
func (f *FakeTB) FatalMessage() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal
}

// SkipMessage returns the message of the Skip that ended fn, or "".
func (f *FakeTB) SkipMessage() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skip
}
