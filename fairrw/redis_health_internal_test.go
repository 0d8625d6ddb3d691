package fairrw

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// silentTelemetry is a Client's telemetry that goes nowhere, for tests that
// build a bare Client.
func silentTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel, err := newTelemetry(telemetryConfig{tracer: tracenoop.NewTracerProvider(), meter: metricnoop.NewMeterProvider(),
		log: orSilent(nil), policy: "test", deployment: "test", addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// healthEnv is a telemetry recording metrics into a ManualReader and logs
// into a list, as a Client of the deployment "eu" on two addresses.
type healthEnv struct {
	t      *telemetry
	reader *sdkmetric.ManualReader
	logs   *records
}

func newHealthEnv(t *testing.T) *healthEnv {
	t.Helper()
	e := &healthEnv{reader: sdkmetric.NewManualReader(), logs: &records{}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tel, err := newTelemetry(telemetryConfig{tracer: tracenoop.NewTracerProvider(), meter: mp,
		log: slog.New(e.logs), policy: "writer-preferring", deployment: "eu", addr: "10.0.0.1:6379,10.0.0.2:6379"})
	if err != nil {
		t.Fatal(err)
	}
	e.t = tel
	t.Cleanup(tel.health.close)
	return e
}

// sums returns the points of the int64 sum name, by attribute set.
func (e *healthEnv) sums(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
			}
		}
	}
	return out
}

func point(kvs ...attribute.KeyValue) string {
	s := attribute.NewSet(kvs...)
	return s.Encoded(attribute.DefaultEncoder())
}

// records is a slog.Handler keeping every record.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// messages returns the messages logged, in order.
func (h *records) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		out = append(out, r.Level.String()+" "+r.Message)
	}
	return out
}

func (h *records) attr(i int, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := ""
	h.recs[i].Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
		}
		return true
	})
	return v
}

var (
	eu      = attrDeployment.String("eu")
	refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
)

// TestRedisHealthOneLinePerOutage: an outage is one Warn line when the
// first call or dial fails, whatever fails after it, and one Info line
// once Redis answered with no failure for recoverAfter; meanwhile
// fairrw.redis.unreachable is 1 for the deployment. Dials are counted per
// address, failed ones by error.type; connections are open ones; a
// connection that answers after an earlier one did is a reconnect.
func TestRedisHealthOneLinePerOutage(t *testing.T) {
	e := newHealthEnv(t)
	tel := e.t
	const a1, a2 = "10.0.0.1:6379", "10.0.0.2:6379"
	server := func(host string) []attribute.KeyValue {
		return []attribute.KeyValue{eu, attribute.String("server.address", host), attribute.Int("server.port", 6379)}
	}

	tel.redisConnected(a1)
	tel.redisHandshake(a1) // the first connection answers
	tel.redisAnswered()
	if got := e.logs.messages(); len(got) != 0 {
		t.Fatalf("logged %q while Redis answers", got)
	}

	// The outage: a dial refused, calls failing, a connection closing
	// before any answer, many times over.
	tel.redisDisconnected(a1, true)
	for range 5 {
		tel.redisDialFailed(context.Background(), a1, refused)
		tel.redisFailed(context.Background(), a1, io.EOF)
	}
	tel.redisConnected(a2)
	tel.redisDisconnected(a2, false) // accepted, never answered: a paused server
	if got, want := e.logs.messages(), []string{"WARN fairrw: Redis unreachable"}; !slices.Equal(got, want) {
		t.Fatalf("logs %q, want %q", got, want)
	}
	if got := e.logs.attr(0, "addr"); got != a1 {
		t.Errorf("the outage's line names %q, want the address that failed, %s", got, a1)
	}
	if got := e.logs.attr(0, "error.type"); got != "unavailable" {
		t.Errorf("error.type %q, want unavailable", got)
	}
	if got := e.sums(t, "fairrw.redis.unreachable"); got[point(eu)] != 1 {
		t.Errorf("unreachable %v during the outage, want 1", got)
	}
	dials := e.sums(t, "fairrw.redis.dials")
	failed := func(host string) string {
		return point(append(server(host), attribute.String("error.type", "unavailable"))...)
	}
	if dials[point(server("10.0.0.1")...)] != 1 || dials[failed("10.0.0.1")] != 5 || dials[failed("10.0.0.2")] != 1 {
		t.Errorf("dials %v: want 1 answered and 5 failed to %s, 1 failed (no answer) to %s", dials, a1, a2)
	}
	if conns := e.sums(t, "fairrw.redis.connections"); conns[point(server("10.0.0.1")...)] != 0 || conns[point(server("10.0.0.2")...)] != 0 {
		t.Errorf("connections %v, want none open", conns)
	}

	// Redis is back: an answer right after the last failure does not end
	// the outage at once, but recoverAfter later it does, by itself.
	tel.redisConnected(a1)
	tel.redisHandshake(a1)
	if n := e.sums(t, "fairrw.redis.reconnects")[point(server("10.0.0.1")...)]; n != 1 {
		t.Errorf("reconnects %d, want 1", n)
	}
	if got := e.logs.messages(); len(got) != 1 {
		t.Fatalf("logs %q: the outage ended within recoverAfter of its last failure", got)
	}
	deadline := time.Now().Add(10 * recoverAfter)
	for len(e.logs.messages()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got, want := e.logs.messages(), []string{"WARN fairrw: Redis unreachable", "INFO fairrw: Redis reachable again"}; !slices.Equal(got, want) {
		t.Fatalf("logs %q, want %q", got, want)
	}
	if got := e.logs.attr(1, "failures"); got != "11" {
		t.Errorf("the end of the outage counts %s failures, want 11", got)
	}
	if got := e.sums(t, "fairrw.redis.unreachable"); got[point(eu)] != 0 {
		t.Errorf("unreachable %v after the outage, want 0", got)
	}

	// A second outage is a second pair of lines.
	tel.redisFailed(context.Background(), a2, fmt.Errorf("%w: no answer", errRedisTimeout))
	if got := e.logs.messages(); len(got) != 3 || e.logs.attr(2, "error.type") != "redis_timeout" {
		t.Errorf("logs %q: want a third line, of error.type redis_timeout", got)
	}
}

// TestRedisHealthPartialOutage: on a cluster with one shard down, the
// healthy shards' answers do not end the outage while the dead shard's
// calls keep failing: one line, not one per answer.
func TestRedisHealthPartialOutage(t *testing.T) {
	e := newHealthEnv(t)
	for range 20 {
		e.t.redisFailed(context.Background(), "10.0.0.2:6379", refused)
		e.t.redisAnswered()
		time.Sleep(recoverAfter / 10)
	}
	if got, want := e.logs.messages(), []string{"WARN fairrw: Redis unreachable"}; !slices.Equal(got, want) {
		t.Fatalf("logs %q, want %q", got, want)
	}
}

// TestRedisHealthClose: closing ends the Client's part of the gauge, with
// no line, and reports nothing after, not even a failed dial.
func TestRedisHealthClose(t *testing.T) {
	e := newHealthEnv(t)
	e.t.redisFailed(context.Background(), "10.0.0.1:6379", refused)
	e.t.health.close()
	e.t.redisFailed(context.Background(), "10.0.0.1:6379", refused)
	e.t.redisDialFailed(context.Background(), "10.0.0.1:6379", refused) // closing cut it short
	e.t.redisAnswered()
	if got := e.sums(t, "fairrw.redis.unreachable"); got[point(eu)] != 0 {
		t.Errorf("unreachable %v after close, want 0", got)
	}
	if got := e.sums(t, "fairrw.redis.dials"); len(got) != 0 {
		t.Errorf("dials %v after close, want none counted", got)
	}
	if got := e.logs.messages(); len(got) != 1 {
		t.Errorf("logs %q, want the outage's first line only", got)
	}
}

// TestKindOf: every sentinel error maps to its own error.type and outcome,
// wrapped or tagged, and an unavailable Redis wins over the ctx's error it
// also wraps, so that an outage never reads as a lock-wait timeout.
func TestKindOf(t *testing.T) {
	ctxErr := context.DeadlineExceeded
	for _, c := range []struct {
		err     error
		errType string
		outcome string
	}{
		{nil, "", "granted"},
		{fmt.Errorf("%w: x", ErrNotAcquired), "not_acquired", "not_acquired"},
		{fmt.Errorf("fairrw: waiting: %w", ctxErr), "deadline_exceeded", "cancelled"},
		{fmt.Errorf("fairrw: acquire: %w", context.Canceled), "canceled", "cancelled"},
		{tag("Redis at x unavailable", ErrUnavailable, ctxErr, refused), "unavailable", "unavailable"},
		{tag("no answer", errRedisTimeout, ctxErr), "redis_timeout", "unavailable"},
		{errNoAnswer, "redis_timeout", "unavailable"},
		{refused, "unavailable", "unavailable"},
		{io.EOF, "unavailable", "unavailable"},
		{tag("refused", ErrPermission), "permission", "error"},
		{closedError("x"), "closed", "closed"},
		{tag("shut down", ErrLeaseLost, ErrClosed), "closed", "closed"},
		{&policyError{msg: "x"}, "policy_mismatch", "error"},
		{fmt.Errorf("%w: x", ErrNotReplicated), "not_replicated", "error"},
		{fmt.Errorf("%w: x", ErrClockSkew), "clock_skew", "error"},
		{fmt.Errorf("%w: x", ErrInvalidName), "invalid_name", "error"},
		{fmt.Errorf("%w: x", ErrInvalidOption), "invalid_option", "error"},
		{fmt.Errorf("%w: x", ErrNotHeld), "not_held", "error"},
		{fmt.Errorf("%w: x", ErrLeaseLost), "lease_lost", "error"},
	} {
		k := kindOf(c.err)
		if got := k.info(); got.errorType != c.errType || got.outcome != c.outcome {
			t.Errorf("%v: error.type %q, outcome %q; want %q, %q", c.err, got.errorType, got.outcome, c.errType, c.outcome)
		}
		// A span's status is its kind's text: never the detail (x), where
		// the lock's name would be.
		if st := k.info().status; c.err != nil && (st == "" || strings.HasSuffix(st, " x") || strings.Contains(st, `"x"`)) {
			t.Errorf("%v: status %q, want its sentinel's text", c.err, st)
		}
	}
}

// TestRefusalsLoggedOncePerInterval: a Redis that refuses every call (a
// password rotated under a running service) is one log line per
// refusalLogEvery, the next saying how many were not logged; other
// failures are logged each.
func TestRefusalsLoggedOncePerInterval(t *testing.T) {
	e := newHealthEnv(t)
	for range 5 {
		e.t.logFailure(context.Background(), kindPermission, "fairrw: acquire failed", "error.type", "permission")
	}
	for range 3 {
		e.t.logFailure(context.Background(), kindPolicyMismatch, "fairrw: acquire failed", "error.type", "policy_mismatch")
	}
	if got := e.logs.messages(); len(got) != 4 {
		t.Fatalf("logs %q: want 1 refusal and 3 policy mismatches", got)
	}
	e.t.health.mu.Lock()
	e.t.health.lastRefusal = time.Now().Add(-refusalLogEvery) // the interval passed
	e.t.health.mu.Unlock()
	e.t.logFailure(context.Background(), kindPermission, "fairrw: acquire failed", "error.type", "permission")
	if got := e.logs.messages(); len(got) != 5 {
		t.Fatalf("logs %q: want a second refusal's line", got)
	}
	if got := e.logs.attr(4, "refusals_not_logged"); got != "4" {
		t.Errorf("refusals_not_logged=%q, want 4", got)
	}
}

// lateDeadline is a ctx whose deadline has passed but whose timer has not
// marked it done yet: the moment a dial or call cut short by the deadline
// returns on a loaded machine, before context's own timer runs.
type lateDeadline struct{ context.Context }

func (lateDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestDialCutByDeadlineIsNoOutage: a dial that its ctx's deadline ended
// within slowAnswer is the caller's deadline, not Redis unreachable, even
// when it returns before ctx reports its end (a Lock's 500 ms wait, whose
// subscription's dial it ended, was logged as an outage with two copies of
// the suite side by side). A call cut short the same way (endCall) says
// nothing of Redis either, and a dial that failed on its own still counts.
func TestDialCutByDeadlineIsNoOutage(t *testing.T) {
	e := newHealthEnv(t)
	e.t.slowAnswer = slowAnswer // the library's own: newHealthEnv leaves it zero
	ctx := lateDeadline{context.Background()}
	if ctx.Err() != nil {
		t.Fatal("the ctx reports its end: the test needs one that does not yet")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dial := e.t.dialer(&rueidis.ClientOption{})
	if conn, err := dial(ctx, l.Addr().String(), &net.Dialer{}, nil); err == nil {
		conn.Close()
		t.Fatal("a dial past its ctx's deadline connected")
	}
	rc := e.t.startCall(ctx, nil)
	e.t.endCall(&rc, fmt.Errorf("dial tcp %s: i/o timeout", l.Addr()), false)
	if got := e.logs.messages(); len(got) != 0 {
		t.Fatalf("logged %q for a dial and a call that their ctx's deadline ended", got)
	}
	// The same dial with a ctx that has no deadline, to a port nobody
	// listens on, is Redis unreachable: a socket bound and never listening
	// holds the port, so that the dial is refused.
	if conn, err := dial(context.Background(), refusingAddr(t), &net.Dialer{}, nil); err == nil {
		conn.Close()
		t.Fatal("a dial to a port bound without a listener connected")
	}
	if got, want := e.logs.messages(), []string{"WARN fairrw: Redis unreachable"}; !slices.Equal(got, want) {
		t.Fatalf("logs %q after a refused dial, want %q", got, want)
	}
}

// refusingAddr returns the address of a loopback port bound by a socket
// that never listens, held until the test ends: a connection to it is
// refused, and no other listener can take the port meanwhile.
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
