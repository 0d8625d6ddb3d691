package itest

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// A call still under way well past its ctx's end is about to be an
// overrun: where its goroutine waits says why, and is gone by the time the
// call returns. watchStuck logs that goroutine's stack once it is still
// under way confOverrunBound (plus the machine's lateness so far) after
// ctx's deadline, for the first such call of a subtest only: collecting
// every goroutine's stack stops the world for a moment.

// confGoroutine returns the calling goroutine's header ("goroutine 123").
func confGoroutine() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	head, _, _ := strings.Cut(string(b), " [")
	return head
}

// watchStuck watches a call of op made with ctx on the calling goroutine;
// the func it returns stops watching (call it when the call returned).
func (e *confEnv) watchStuck(ctx context.Context, op string) func() {
	dl, ok := ctx.Deadline()
	if !ok || e.stuckLogged.Load() {
		return func() {}
	}
	g := confGoroutine()
	var wait time.Duration = confOverrunBound
	if e.o.ctl != nil {
		wait += e.o.ctl.Worst()
	}
	t := time.AfterFunc(time.Until(dl)+wait, func() {
		if !e.stuckLogged.CompareAndSwap(false, true) {
			return
		}
		buf := make([]byte, 16<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, s := range strings.Split(string(buf), "\n\n") {
			if strings.HasPrefix(s, g+" [") {
				e.T.Logf("conformance: %s still under way %v after its ctx's deadline; its goroutine:\n%s", op, time.Since(dl).Round(time.Millisecond), s)
				return
			}
		}
	})
	return func() { t.Stop() }
}

// stuckFlag is embedded in confEnv: whether a stuck call was logged.
type stuckFlag struct{ stuckLogged atomic.Bool }
