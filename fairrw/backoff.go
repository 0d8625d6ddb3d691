package fairrw

import (
	"context"
	"time"
)

// backoff is the growing pause of a retry loop: it starts at start, and
// doubles after every wait, up to max.
type backoff struct{ start, next, max time.Duration }

func newBackoff(start, max time.Duration) backoff {
	return backoff{start: start, next: start, max: max}
}

// wait sleeps for the current pause, or returns early with ctx's error, or
// ErrClosed when closing closes (nil: never). Either way the next pause is
// twice as long, up to max.
func (b *backoff) wait(ctx context.Context, closing <-chan struct{}) error {
	err := sleepCtx(ctx, closing, b.next)
	b.next = min(b.next*2, b.max)
	return err
}

// reset makes the next pause the first again.
func (b *backoff) reset() { b.next = b.start }

// sleepCtx sleeps for d, or returns early with ctx's error or ErrClosed.
func sleepCtx(ctx context.Context, closing <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closing:
		return ErrClosed
	}
}
