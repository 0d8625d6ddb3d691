package fairness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// Worker is one closed-loop worker: one lock owner (its own handle) that
// loops acquire, hold, release, think.
type Worker struct {
	Class Class
	Index int // within its class: Request.Client
	Mutex Mutex
	Hold  time.Duration
	// Think returns the pause after a release, given the time since the
	// run's start; nil for none. See UniformThink and PeriodThink.
	Think func(sinceStart time.Duration) time.Duration
	// ReadShare, when > 0, makes the worker mixed: each request is a read
	// with this probability, else a write, and is recorded under the class
	// it asked for (Class is then only the worker's label).
	ReadShare float64

	recording bool
}

// UniformThink pauses a uniform random time in [lo, hi].
func UniformThink(lo, hi time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return lo + rand.N(hi-lo+1) }
}

// PeriodThink pauses until the next multiple of period since the run's
// start, so that the workers using it arrive together (bursts).
func PeriodThink(period time.Duration) func(time.Duration) time.Duration {
	return func(since time.Duration) time.Duration { return (since/period+1)*period - since }
}

// Mode returns the lock mode a request of class c asks for.
func (c Class) Mode() fairrw.Mode {
	if c == Reader {
		return fairrw.Read
	}
	return fairrw.Write
}

// Loop is one closed-loop run. Requests asked within Window are recorded
// in Rec, each bounded by a context of the window's length: a request still
// waiting then is recorded as timed out, at the window (measuring.md: never
// dropped). The workers keep looping past the window, unrecorded, so that
// every recorded request waits under the same load until it ends; the run
// stops (cancelling the unrecorded requests) once every worker has asked
// past the window. Any other lock error ends the run with that error.
type Loop struct {
	Window time.Duration
	Rec    *Recorder
	// OnGrant, if set, is called when a worker is granted, before its hold;
	// the function it returns is called when the hold ends, before Unlock.
	OnGrant func(w *Worker, class Class, h Hold) (holdEnds func())

	start   time.Time
	stop    context.Context
	pending sync.WaitGroup // workers still recording
}

// Run runs workers until every one has asked past the window, or ctx ends.
// It returns the run's start, the origin of the window.
func (lp *Loop) Run(ctx context.Context, workers []*Worker) (time.Time, error) {
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	lp.stop = stop
	lp.pending.Add(len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	lp.start = time.Now()
	for i, w := range workers {
		w.recording = true
		wg.Go(func() {
			if errs[i] = lp.work(w); errs[i] != nil {
				cancel()
			}
		})
	}
	lp.pending.Wait()
	cancel()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return lp.start, err
	}
	return lp.start, ctx.Err()
}

func (lp *Loop) work(w *Worker) error {
	defer lp.stopRecording(w)
	for lp.stop.Err() == nil {
		class := w.pick()
		l, err := lp.ask(w, class)
		if err != nil {
			return err
		}
		if l != nil {
			if err := lp.hold(w, class, l); err != nil {
				return err
			}
		}
		if w.Think != nil {
			Pause(lp.stop, w.Think(time.Since(lp.start)))
		}
	}
	return nil
}

// pick returns the class of the worker's next request.
func (w *Worker) pick() Class {
	if w.ReadShare > 0 {
		if rand.Float64() < w.ReadShare {
			return Reader
		}
		return Writer
	}
	return w.Class
}

func (lp *Loop) stopRecording(w *Worker) {
	if w.recording {
		w.recording = false
		lp.pending.Done()
	}
}

// ask makes one request, recorded if it was asked within the window. It
// returns a nil Hold for a request that timed out or that the run's end
// cancelled.
func (lp *Loop) ask(w *Worker, class Class) (Hold, error) {
	asked := time.Now()
	if asked.Sub(lp.start) >= lp.Window {
		lp.stopRecording(w)
	}
	record := w.recording
	ctx, cancel := lp.stop, context.CancelFunc(func() {})
	if record {
		ctx, cancel = context.WithTimeout(lp.stop, lp.Window)
	}
	defer cancel()
	l, err := w.Mutex.Acquire(ctx, class)
	granted := time.Now()
	switch {
	case err == nil:
		if record {
			lp.Rec.Add(Request{Class: class, Client: w.Index, Asked: asked, Wait: granted.Sub(asked), Woken: WokenBy(l)})
		}
		return l, nil
	case lp.stop.Err() != nil: // the run ended, or another worker failed
		return nil, nil
	case record && errors.Is(err, context.DeadlineExceeded):
		lp.Rec.Timeout(class, w.Index, asked, lp.Window)
		return nil, nil
	}
	return nil, fmt.Errorf("%s %s: %w", class, w.Mutex.Owner(), err)
}

// hold keeps the hold for the worker's hold time, then unlocks it; the
// OnGrant hook sees the hold from its grant to its end, before the Unlock.
func (lp *Loop) hold(w *Worker, class Class, l Hold) error {
	holdEnds := func() {}
	if lp.OnGrant != nil {
		holdEnds = lp.OnGrant(w, class, l)
	}
	if w.Hold > 0 {
		time.Sleep(w.Hold)
	}
	holdEnds()
	if err := l.Unlock(context.Background()); err != nil {
		return fmt.Errorf("%s %s unlock: %w", class, w.Mutex.Owner(), err)
	}
	return nil
}

// Pause sleeps for d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
