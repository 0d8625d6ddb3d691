package connect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// tracingWrapper stands for a caller's rueidis instrumentation (a tracing
// wrapper such as rueidisotel's): it passes every call on to the client it
// wraps, counts them by kind, and keeps the span each call came with.
type tracingWrapper struct {
	rueidis.Client
	mu     sync.Mutex
	calls  map[string]int
	parent map[trace.SpanID]bool // the spans calls came with
	closed bool
}

func wrapTracing(rdb rueidis.Client) *tracingWrapper {
	return &tracingWrapper{Client: rdb, calls: map[string]int{}, parent: map[trace.SpanID]bool{}}
}

func (w *tracingWrapper) saw(ctx context.Context, kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls[kind]++
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		w.parent[sc.SpanID()] = true
	}
}

func (w *tracingWrapper) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	w.saw(ctx, "Do")
	return w.Client.Do(ctx, cmd)
}

func (w *tracingWrapper) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	w.saw(ctx, "DoMulti")
	return w.Client.DoMulti(ctx, cmds...)
}

func (w *tracingWrapper) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	w.saw(ctx, "DoCache")
	return w.Client.DoCache(ctx, cmd, ttl)
}

func (w *tracingWrapper) Receive(ctx context.Context, cmd rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	w.saw(ctx, "Receive")
	return w.Client.Receive(ctx, cmd, fn)
}

// Dedicate wraps the dedicated connection too: fairrw's waiters subscribe
// on one (internal/wait's connections.go), as rueidisotel's wrapper sees.
func (w *tracingWrapper) Dedicate() (rueidis.DedicatedClient, func()) {
	d, release := w.Client.Dedicate()
	return &tracingDedicated{DedicatedClient: d, w: w}, release
}

type tracingDedicated struct {
	rueidis.DedicatedClient
	w *tracingWrapper
}

func (d *tracingDedicated) Receive(ctx context.Context, cmd rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	d.w.saw(ctx, "Receive")
	return d.DedicatedClient.Receive(ctx, cmd, fn)
}

func (w *tracingWrapper) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.Client.Close()
}

func (w *tracingWrapper) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[kind]
}

func (w *tracingWrapper) cameWith(id trace.SpanID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.parent[id]
}

// wrapped returns a Client on r (with client tracking) whose rueidis client
// WithRedisWrapper wraps in a tracingWrapper, and the wrapper.
func wrapped(t *testing.T, r *redistest.Redis, opts ...fairrw.Option) (*fairrw.Client, *tracingWrapper) {
	t.Helper()
	var w *tracingWrapper
	c := itest.NewClient(t, r, itest.Transports[0], append(opts, fairrw.WithRedisWrapper(func(rdb rueidis.Client) rueidis.Client {
		w = wrapTracing(rdb)
		return w
	}))...)
	if w == nil {
		t.Fatal("New returned before the wrapper was given the client")
	}
	return c, w
}

// TestRedisWrapperKeepsSharedReads: a Client whose rueidis client the
// caller wraps still shares reads (WithCohorts), and still stops sharing
// as soon as another Client's writer queues: the invalidation of the
// queue key reaches it through the client it built, while the tracked
// read goes through the wrapper. Every call went through the wrapper, with
// the span of fairrw's round trip as its parent; Close closes it.
func TestRedisWrapperKeepsSharedReads(t *testing.T) {
	for _, p := range itest.CohortPolicies {
		t.Run(p.String(), func(t *testing.T) {
			r := redistest.Start(t)
			ctx := itest.TestCtx(t)
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			c, w := wrapped(t, r, fairrw.WithPolicy(p), fairrw.WithTracerProvider(tp))
			other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			name := "wrapped-share:" + p.String()
			m := c.RWMutex(name)

			r1, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := m.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := hidden.WokenBy(r2); got != "share" {
				t.Fatalf("the second read woken by %q, want share: reads do not share through the wrapper", got)
			}
			wrote := make(chan error, 1)
			go func() {
				l, err := other.RWMutex(name).Lock(ctx)
				if err == nil {
					err = l.Unlock(ctx)
				}
				wrote <- err
			}()
			itest.AwaitWaitingWriters(t, ctx, c, name, 1)
			// The invalidation of the queue key stops sharing: a read then
			// waits behind the writer. (Whether it always comes before
			// Inspect's reply is TestReadShareStopsForWaitingWriter's
			// concern; here, that it comes at all through a wrapped client.)
			stopped := false
			for deadline := time.Now().Add(5 * time.Second); !stopped && time.Now().Before(deadline); {
				short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				l3, err := m.RLock(short)
				cancel()
				switch {
				case err == nil:
					itest.MustUnlock(t, l3)
					time.Sleep(10 * time.Millisecond)
				case errors.Is(err, context.DeadlineExceeded):
					stopped = true
				default:
					t.Fatalf("read behind a waiting writer: %v, want the deadline", err)
				}
			}
			if !stopped {
				t.Fatal("reads still share the hold 5s after another Client's writer queued: the invalidation did not reach the share")
			}
			itest.MustUnlock(t, r1)
			itest.MustUnlock(t, r2)
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}

			// The DoMulti is the janitor's batch of the unlock latches'
			// DELs, which follows the releases on a goroutine of its own: a
			// loaded machine may run it after the test's last Unlock returned.
			for deadline := time.Now().Add(5 * time.Second); w.count("DoMulti") == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for _, kind := range []string{"DoMulti", "DoCache"} {
				if w.count(kind) == 0 {
					t.Errorf("no %s through the wrapper", kind)
				}
			}
			nested := 0
			for _, s := range spans.Ended() {
				if s.Name() == "EVALSHA" && w.cameWith(s.SpanContext().SpanID()) {
					nested++
				}
			}
			if nested == 0 {
				t.Error("no call came to the wrapper with fairrw's round-trip span: its spans would not nest under fairrw's")
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			w.mu.Lock()
			closed := w.closed
			w.mu.Unlock()
			if !closed {
				t.Error("Close did not close the wrapper")
			}
		})
	}
}

// TestRedisWrapperKeepsInvalidationWakeUps: a downgrade publishes nothing
// (Java's rule), yet a reader of a wrapped Client waiting for it is woken
// at once by the invalidation of the lock key, as without the wrapper
// (TestInvalidationWakesReaders); with WithClient it would wait for the
// lock's PTTL.
func TestRedisWrapperKeepsInvalidationWakeUps(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "wrapped:downgrade"
	holder := e.Client(t).RWMutex(n)
	c, w := wrapped(t, e.R, fairrw.WithPolicy(fairrw.Redisson()))
	reader := c.RWMutex(n)
	wl := itest.MustLock(t, holder, fairrw.Write)
	rl := itest.MustFurther(t, wl, fairrw.Read)
	got := make(chan *fairrw.Lease, 1)
	go func() {
		l, err := reader.RLock(itest.TestCtx(t))
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	itest.WaitSubscribers(t, e, "redisson_rwlock:{"+n+"}", 1)
	time.Sleep(50 * time.Millisecond) // let the reader fail its retry and sleep
	itest.MustUnlock(t, wl)           // downgrade: mode=read, nothing published
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		if hidden.WokenBy(l) != "invalidation" {
			t.Errorf("reader woken by %q, want invalidation", hidden.WokenBy(l))
		}
		itest.MustUnlock(t, l)
	case <-time.After(15 * time.Second):
		t.Fatal("reader not woken by the downgrade's invalidation")
	}
	itest.MustUnlock(t, rl)
	if w.count("Receive") == 0 {
		t.Error("the waiter's subscription did not go through the wrapper")
	}
}

// TestRedisWrapperRefusedWithClient: WithRedisWrapper wraps the client
// fairrw builds; with the caller's own (WithClient) it is refused, and
// nothing is sent.
func TestRedisWrapperRefusedWithClient(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t, nil)
	c, err := fairrw.New(fairrw.WithClient(rdb), fairrw.WithRedisWrapper(func(c rueidis.Client) rueidis.Client { return c }))
	if err == nil {
		_ = c.Close()
	}
	if !errors.Is(err, fairrw.ErrInvalidOption) {
		t.Fatalf("New: %v, want ErrInvalidOption", err)
	}
}
