package wait

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// The pauses start at start, double, stop growing at max, and start over
// on reset. synctest's clock makes them exact.
func TestBackoffTimings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBackoff(time.Millisecond, 5*time.Millisecond)
		pause := func() time.Duration {
			t.Helper()
			start := time.Now()
			if err := b.Wait(t.Context(), nil); err != nil {
				t.Fatalf("wait: %v", err)
			}
			return time.Since(start)
		}
		for i, want := range []time.Duration{1, 2, 4, 5, 5} {
			if got := pause(); got != want*time.Millisecond {
				t.Fatalf("pause %d: %v, want %v", i, got, want*time.Millisecond)
			}
		}
		b.Reset()
		if got := pause(); got != time.Millisecond {
			t.Fatalf("pause after reset: %v, want 1ms", got)
		}
	})
}

// A pause ends early with ctx's error when ctx ends, and with ErrClosed
// when closing closes; the next pause still grows.
func TestBackoffCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBackoff(time.Second, 4*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(10*time.Millisecond, cancel)
		start := time.Now()
		if err := b.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Fatalf("cancelled after %v, want 10ms", got)
		}

		closing := make(chan struct{})
		time.AfterFunc(20*time.Millisecond, func() { close(closing) })
		start = time.Now()
		if err := b.Wait(t.Context(), closing); !errors.Is(err, ErrClosed) {
			t.Fatalf("closing: %v, want ErrClosed", err)
		}
		if got := time.Since(start); got != 20*time.Millisecond {
			t.Fatalf("closed after %v, want 20ms", got)
		}

		ctx, cancel = context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start = time.Now()
		if err := b.Wait(ctx, nil); err != nil {
			t.Fatalf("wait: %v", err)
		}
		if got := time.Since(start); got != 4*time.Second {
			t.Fatalf("third pause %v, want the cap, 4s", got)
		}
	})
}
