package wait

import (
	"context"
	"time"
)

// MinRetryBackoff and MaxRetryBackoff bound the pauses between retries of
// one command whose reply was lost (an attempt, a release), and of a lost
// subscription.
const (
	MinRetryBackoff = 5 * time.Millisecond
	MaxRetryBackoff = 500 * time.Millisecond
)

// Backoff is the growing pause of a retry loop: it starts at start, and
// doubles after every wait, up to max.
type Backoff struct{ start, next, max time.Duration }

// NewBackoff returns a Backoff from start up to max.
func NewBackoff(start, max time.Duration) Backoff {
	return Backoff{start: start, next: start, max: max}
}

// Wait sleeps for the current pause, or returns early with ctx's error, or
// ErrClosed when closing closes (nil: never). Either way the next pause is
// twice as long, up to max.
func (b *Backoff) Wait(ctx context.Context, closing <-chan struct{}) error {
	err := Sleep(ctx, closing, b.next)
	b.next = min(b.next*2, b.max)
	return err
}

// Reset makes the next pause the first again.
func (b *Backoff) Reset() { b.next = b.start }

// Sleep sleeps for d, or returns early with ctx's error or ErrClosed.
func Sleep(ctx context.Context, closing <-chan struct{}, d time.Duration) error {
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
