package fairrw

import (
	"context"
	"sync"
	"time"

	"github.com/fairrw/rwlock/internal/hidden"
)

// Work that must still happen after its caller has gone (a grant that
// landed after a cancelled acquire, a release whose answer has not come)
// goes on here, owned by the Client: started at once, retried until Redis
// confirms it or it is moot (whatever it would remove has run out in
// Redis), counted in the fairrw.background.pending metric and logged when
// it outlives its caller. Shutdown waits for it within its ctx; Close stops
// it (what is left then expires with its lease).

// cleanupGrace is how long a call whose ctx has ended still waits, in the
// caller's goroutine, for the clean-up it leaves: on a Redis that answers,
// the clean-up is done before the call returns; on one that does not, the
// call returns this late at most, and the clean-up goes on in the
// background.
const cleanupGrace = hidden.CleanupGrace

// followUpMaxBackoff bounds the pause between two background tries: once
// Redis answers again, what was left is done within it.
const followUpMaxBackoff = 250 * time.Millisecond

// bounded runs f and returns its result, or ctx's error as soon as ctx
// ends, whichever comes first: rueidis can hold a command past its
// context (a second caller waits for a connection being made again, with
// no regard for its own context), and no call may outlive its caller's
// deadline. f runs on a goroutine of the Client's, and must itself end
// soon after ctx does (rueidis ends a command at its context's deadline).
func bounded[T any](c *Client, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	return boundedHalting[T](c, ctx, nil, callFunc[T](f))
}

// boundedAs is bounded for a call of the script procedure (fairrw.inspect,
// say): its round trip has a span of its own, under ctx's (see startCall).
func boundedAs[T any](c *Client, ctx context.Context, procedure string, f func(context.Context) (T, error)) (T, error) {
	return boundedHalting[T](c, ctx, nil, namedCall[T]{f, procedure})
}

// A caller is a call that bounded runs: a func (callFunc), or a request
// whose call method sends it, which then needs no closure around it (an
// allocation on every Redis call).
type caller[T any] interface {
	call(ctx context.Context) (T, error)
}

type callFunc[T any] func(context.Context) (T, error)

func (f callFunc[T]) call(ctx context.Context) (T, error) { return f(ctx) }

// namedCall is a callFunc that names its script (see procedure).
type namedCall[T any] struct {
	f    callFunc[T]
	name string
}

func (n namedCall[T]) call(ctx context.Context) (T, error) { return n.f(ctx) }
func (n namedCall[T]) procedure() string                   { return n.name }

// boundedHalting is bounded for a call that a Shutdown cut short stops
// too (the Client's halt): with cancel, ctx's cancel function, it returns
// when halt ends as well, cancelling ctx first, so that the call and its
// caller see what they would see had halt cancelled ctx. Its caller has
// no need of a context.AfterFunc on halt (two allocations and a
// registration) around each Redis call: waiting on halt here is free, and
// halt never ends before the Client's closing, which wakes the caller's
// sleeps between calls.
//
// What the call's outcome tells of Redis is recorded (see endCall), and
// so is its round trip, as a span, when its caller's span records.
func boundedHalting[T any](c *Client, ctx context.Context, cancel context.CancelFunc, f caller[T]) (T, error) {
	rc := c.telemetry().startCall(ctx, f)
	v, err := runBounded(c, rc.ctx, cancel, f)
	err = asUnavailable(err)
	c.telemetry().endCall(&rc, err, c.isClosing())
	return v, err
}

// runBounded is boundedHalting, untraced.
func runBounded[T any](c *Client, ctx context.Context, cancel context.CancelFunc, f caller[T]) (T, error) {
	if ctx.Done() == nil {
		return f.call(ctx)
	}
	call := &boundedCall[T]{f: f, ctx: ctx, done: make(chan struct{})}
	if !c.backgroundTasks().start(call, false) {
		// The Client closed: Close waits for this call.
		if cancel != nil {
			defer context.AfterFunc(c.haltContext(), cancel)()
		}
		return f.call(ctx)
	}
	var halt <-chan struct{} // nil: never ready
	if cancel != nil {
		halt = c.haltContext().Done()
	}
	select {
	case <-call.done:
		return call.v, call.err
	case <-ctx.Done():
	case <-halt:
		cancel()
	}
	// The caller goes: a call still under way becomes background work,
	// which Shutdown waits for.
	c.backgroundTasks().adopt(&call.callState)
	var zero T
	return zero, ctx.Err()
}

// callState is what the tasks know of a call (a boundedCall): whether it
// finished, and whether its caller left it to the background first. Both
// are guarded by tasks.mu.
type callState struct {
	finished, adopted bool
}

func (s *callState) state() *callState { return s }

// adopt makes the call of s background work if it is still under way: its
// caller stopped waiting for it.
func (t *tasks) adopt(s *callState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !s.finished {
		s.adopted = true
		t.n++
	}
}

// finishCall records that the call of s returned, and that the background
// work it became, if it did, is done.
func (t *tasks) finishCall(s *callState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.finished = true
	if s.adopted {
		t.doneLocked()
	}
}

// boundedCall is one call of bounded, run by a goroutine of the Client's:
// its result is written before done closes, and read only after. One
// object rather than a result channel and a closure: every Redis call
// goes through bounded.
type boundedCall[T any] struct {
	callState
	f    caller[T]
	ctx  context.Context
	v    T
	err  error
	done chan struct{}
}

func (b *boundedCall[T]) run(context.Context) {
	b.v, b.err = b.f.call(b.ctx)
	close(b.done)
}

// tasks are a Client's background work: Shutdown waits for them, Close
// stops them and waits. The Redis calls of callers still waiting for them
// (bounded) run on the same goroutines but are not background work until
// their caller leaves them (adopt): Shutdown's drain waits for the callers,
// and a call whose caller just had its answer must not make a Shutdown
// right after it report work left undone.
//
// Each task runs on a goroutine of its own while it runs, but goroutines
// are kept for the next task (workers): every Redis call runs as a task
// (see bounded), and a new goroutine for each one spent more CPU on
// creating it and growing its stack to what the rueidis call needs than
// the call spent itself. A worker left idle for workerIdle ends; Close
// ends them all and waits for them.
type tasks struct {
	mu     sync.Mutex
	closed bool
	n      int             // background tasks under way, and calls their callers left
	idle   []chan struct{} // closed when n drops to 0
	ctx    context.Context // ends when the tasks are closed
	stop   context.CancelFunc

	work    chan job // unbuffered: a send succeeds only to an idle worker
	workers sync.WaitGroup
}

// workerIdle is how long a worker waits for another task before it ends.
const workerIdle = 2 * time.Second

func newTasks() *tasks {
	ctx, stop := context.WithCancel(context.Background())
	return &tasks{ctx: ctx, stop: stop, work: make(chan job)}
}

// run starts f on a goroutine of its own, unless the tasks were closed (it
// then reports false); f must return soon after its ctx ends.
func (t *tasks) run(f func(ctx context.Context)) bool {
	return t.start(taskFunc(f), true)
}

// A job is a task handed to a worker, and whether it is background work
// (counted in n) or a call.
type job struct {
	f          task
	background bool
}

// A task is what tasks run: a func (taskFunc), or an object whose run
// method is the task, started without allocating a method value.
type task interface{ run(ctx context.Context) }

type taskFunc func(ctx context.Context)

func (f taskFunc) run(ctx context.Context) { f(ctx) }

// start is run for a task: an idle worker takes it, or a new one.
// background says it is background work, which Shutdown waits for (n),
// rather than a call.
func (t *tasks) start(f task, background bool) bool {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return false
	}
	if background {
		t.n++
	}
	t.workers.Add(1) // for a new worker, given back below if none is needed
	t.mu.Unlock()
	j := job{f: f, background: background}
	select {
	case t.work <- j:
		t.workers.Done()
	default:
		go t.worker(j)
	}
	return true
}

// worker runs f, then every task handed to it, until it has been idle for
// workerIdle or the tasks are closed.
func (t *tasks) worker(j job) {
	defer t.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		j.f.run(t.ctx)
		if j.background {
			t.done()
		} else if s, ok := j.f.(interface{ state() *callState }); ok {
			t.finishCall(s.state())
		}
		if a, ok := j.f.(interface{ afterDone() }); ok {
			a.afterDone() // a task whose answer must follow its count (releaseTask)
		}
		idle.Reset(workerIdle) // drops a tick the task outlasted
		select {
		case j = <-t.work:
		case <-t.ctx.Done():
			return
		case <-idle.C:
			return
		}
	}
}

func (t *tasks) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doneLocked()
}

func (t *tasks) doneLocked() {
	t.n--
	if t.n == 0 {
		for _, ch := range t.idle {
			close(ch)
		}
		t.idle = nil
	}
}

// wait waits until no task is under way, or for ctx to end.
func (t *tasks) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.idle = append(t.idle, ch)
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeGrace is how long close waits for a task after stopping it. Every
// task returns soon after its ctx ends, except a Redis call that rueidis
// itself holds without looking at the ctx: one queued behind a connection
// being made to a server that does not answer waits for the dial and
// handshake timeouts, seconds. Close does not wait for those.
const closeGrace = 250 * time.Millisecond

// close stops every task and waits for them, and for the workers to end;
// with grace, up to closeGrace only: a task still running then ends when
// rueidis gives its call up, and nothing waits for it. No task starts
// afterwards.
func (t *tasks) close(grace bool) {
	t.mu.Lock()
	t.closed = true
	t.stop()
	t.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		_ = t.wait(context.Background())
		t.workers.Wait()
		close(ended)
	}()
	if !grace {
		<-ended
		return
	}
	timer := time.NewTimer(closeGrace)
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
	}
}

// withTimer is context.WithTimeout without a deadline: the context ends
// after d by a timer. rueidis runs a command whose context has a deadline
// synchronously when its connection is idle, and only that deadline ends
// it then, not a cancellation: a renewal round bounded by a deadline would
// hold Close, on a Redis that does not answer, for a whole renew interval.
// (Reconnecting, rueidis bounds its handshake by the dial timeout.)
func withTimer(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
