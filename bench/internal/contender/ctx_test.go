package contender

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateContext is a context whose deadline has passed but which does not
// say so yet: the moment between a connection's deadline firing and the
// context's timer.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestCtxEnded(t *testing.T) {
	if err := ctxEnded(context.Background()); err != nil {
		t.Errorf("Background: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := ctxEnded(ctx); err != nil {
		t.Errorf("an hour to go: %v", err)
	}
	if err := ctxEnded(lateContext{context.Background()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline passed, not reported yet: %v, want context.DeadlineExceeded", err)
	}
	cancel()
	if err := ctxEnded(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
