package deadline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

const (
	// dlBudget is the ctx deadline of every call: from the fault (a-frozen,
	// c-stopped), or from the freeze of a call already waiting (b-waiting).
	dlBudget = 300 * time.Millisecond
	// dlBound is the overrun tolerated past the deadline. The goal is 50ms;
	// CI machines are small and noisy.
	dlBound = time.Second
	// dlEarly: a call that returns this long before its deadline failed for
	// a reason of its own (connection refused, say), not for ctx's.
	dlEarly = 20 * time.Millisecond
	// dlWaitFor is how long a b-waiting Lock waits before Redis freezes.
	dlWaitFor = 200 * time.Millisecond
	// dlHang: a call still running this long after its deadline is
	// reported hung, and Redis is brought back to let it end.
	dlHang = 20 * time.Second
	// dlLease is every Client's lease; their unlock timeout is the
	// default (5s), so that a call that still waits on it is caught.
	dlLease = 2 * time.Second
	// dlMargin is how long past a lease after Redis came back the lock may
	// still be taken.
	dlMargin = 1500 * time.Millisecond
)

// A dlFault is what Redis does to a call.
type dlFault string

const (
	dlFrozen  dlFault = "a-frozen"  // SIGSTOP before the call
	dlWaiting dlFault = "b-waiting" // SIGSTOP while the call waits for a held lock
	dlStopped dlFault = "c-stopped" // stopped (connection refused) before the call
)

var (
	dlNoWait = []dlFault{dlFrozen, dlStopped}            // calls that do not wait for a holder
	dlWaits  = []dlFault{dlFrozen, dlWaiting, dlStopped} // Lock and RLock
)

// dlKind is what a target locks.
type dlKind int

const (
	dlRWKind     dlKind = iota // a read-write lock of the target's policy
	dlMutexKind                // a Mutex
	dlQuorumKind               // a read-write lock over a quorum of 3 nodes
)

// dlTarget is one column of the closing table.
type dlTarget struct {
	name   string // the policy= of the logs
	kind   dlKind
	policy fairrw.Policy
}

// dlTargets are every policy, the Mutex and a quorum (writer-preferring).
func dlTargets() []dlTarget {
	var out []dlTarget
	for _, p := range itest.Policies {
		out = append(out, dlTarget{name: p.String(), kind: dlRWKind, policy: p})
	}
	return append(out,
		dlTarget{name: "mutex", kind: dlMutexKind, policy: fairrw.Redisson()},
		dlTarget{name: "quorum", kind: dlQuorumKind, policy: fairrw.WriterPreferring()})
}

// dlSpec is one call of a target.
type dlSpec struct {
	call   string
	faults []dlFault
	// strict: the error must wrap ctx's however early the call returns
	// (Unlock: a release not confirmed in time goes on in the background).
	strict bool
	// setup prepares the call on the lock name, with Redis up.
	setup func(t *testing.T, e *dlEnv, name string, f dlFault) dlCall
}

// dlCall is a call ready to run.
type dlCall struct {
	run func(ctx context.Context) error
	// after releases what the setup held and what run got, once Redis is
	// back; errors are ignored (a hold may have been lost meanwhile).
	after func()
}

// dlHolds are holds to release after a case.
type dlHolds struct {
	mu    sync.Mutex
	undos []func()
}

func (h *dlHolds) add(undo func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.undos = append(h.undos, undo)
}

func (h *dlHolds) lease(l *fairrw.Lease) {
	if l != nil {
		h.add(func() { dlUnlock(l) })
	}
}

func (h *dlHolds) quorum(l *fairrw.Lease) {
	if l != nil {
		h.add(func() { dlUnlock(l) })
	}
}

func (h *dlHolds) release() {
	h.mu.Lock()
	undos := h.undos
	h.undos = nil
	h.mu.Unlock()
	for i := len(undos) - 1; i >= 0; i-- {
		undos[i]()
	}
}

// dlUnlock unlocks l, ignoring the error.
func dlUnlock(l interface{ Unlock(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.Unlock(ctx)
}

// dlNode is one redis-server and what is done to it.
type dlNode struct {
	r    *redistest.Redis
	raw  rueidis.Client
	down dlFault // "" while up
}

func (n *dlNode) fail(t *testing.T, f dlFault) {
	t.Helper()
	if f == dlStopped {
		n.r.Stop(t)
	} else {
		n.r.Pause(t)
	}
	n.down = f
}

func (n *dlNode) restore(t *testing.T) {
	t.Helper()
	switch n.down {
	case "":
		return
	case dlStopped:
		n.r.Restart(t)
	default:
		n.r.Resume(t)
	}
	n.down = ""
}

// dlEnv is one target's servers (one, or three for the quorum), used by
// one case at a time.
type dlEnv struct {
	tg     dlTarget
	nodes  []*dlNode
	report *dlReport
}

// newDLEnv starts the target's servers, with AOF so that a stopped server
// restarts with the holds it had.
func newDLEnv(t *testing.T, tg dlTarget, report *dlReport) *dlEnv {
	t.Helper()
	e := &dlEnv{tg: tg, report: report}
	n := 1
	if tg.kind == dlQuorumKind {
		n = 3
	}
	for range n {
		r := redistest.StartProcess(t, "--appendonly", "yes")
		e.nodes = append(e.nodes, &dlNode{r: r, raw: itest.FRaw(t, r)})
	}
	return e
}

func (e *dlEnv) opts() []fairrw.Option {
	return []fairrw.Option{fairrw.WithPolicy(e.tg.policy), fairrw.WithLeaseTime(dlLease)}
}

// client is a Client of the target on the first node, with a rueidis
// client of its own (RESP3, tracking), closed at cleanup.
func (e *dlEnv) client(t *testing.T) *fairrw.Client {
	return itest.NewClient(t, e.nodes[0].r, itest.Transports[0], e.opts()...)
}

// sharedClient is a Client on the first node over a rueidis client of the
// test's own (WithClient), which its Close does not close.
func (e *dlEnv) sharedClient(t *testing.T) *fairrw.Client {
	return itest.PausableClient(t, e.nodes[0].r, e.opts()...)
}

// quorum is a Quorum over Clients of its own, one per node, closed at
// cleanup after the Quorum.
func (e *dlEnv) quorum(t *testing.T) *fairrw.Quorum {
	t.Helper()
	clients := make([]*fairrw.Client, len(e.nodes))
	for i, n := range e.nodes {
		clients[i] = itest.NewClient(t, n.r, itest.Transports[0], e.opts()...)
	}
	q, err := fairrw.NewQuorum(clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// otherWrite takes the write lock of name for another owner, on a Client
// of its own, and returns its release.
func (e *dlEnv) otherWrite(t *testing.T, name string) func() {
	t.Helper()
	switch e.tg.kind {
	case dlMutexKind:
		l := itest.MustLockMutex(t, e.client(t).Mutex(name))
		return func() { dlUnlock(l) }
	case dlQuorumKind:
		l, err := e.quorum(t).RWMutex(name).Lock(itest.TestCtx(t))
		if err != nil {
			t.Fatalf("quorum Lock %s: %v", name, err)
		}
		return func() { dlUnlock(l) }
	}
	l := itest.MustLock(t, e.client(t).RWMutex(name), fairrw.Write)
	return func() { dlUnlock(l) }
}

func (e *dlEnv) fail(t *testing.T, f dlFault) {
	t.Helper()
	for _, n := range e.nodes {
		n.fail(t, f)
	}
}

func (e *dlEnv) restore(t *testing.T) {
	t.Helper()
	for _, n := range e.nodes {
		n.restore(t)
	}
}

// dlReturn is how a call returned.
type dlReturn struct {
	err error
	at  time.Time
}

// run runs one case: s's call under fault f, then the checks once Redis
// is back.
func (e *dlEnv) run(t *testing.T, s dlSpec, f dlFault) {
	ctl := lateness.Start(t)
	label := fmt.Sprintf("policy=%s call=%s case=%s", e.tg.name, s.call, f)
	name := "deadline:" + e.tg.name + ":" + s.call + ":" + string(f)
	call := s.setup(t, e, name, f)
	// Registered after the setup's Clients: a case that fails leaves Redis
	// up for the next one, before its Clients close.
	t.Cleanup(func() { e.restore(t) })

	var deadline time.Time
	res := make(chan dlReturn, 1)
	start := func(ctx context.Context) {
		go func() {
			err := call.run(ctx)
			res <- dlReturn{err: err, at: time.Now()}
		}()
	}
	if f == dlWaiting {
		deadline = time.Now().Add(dlWaitFor + dlBudget)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		start(ctx)
		time.Sleep(time.Until(deadline.Add(-dlBudget)))
		select {
		case r := <-res:
			t.Fatalf("deadline: %s: returned before the freeze, while the lock was held: %v", label, r.err)
		default:
		}
		e.fail(t, dlFrozen)
		if left := time.Until(deadline); left < dlBudget-50*time.Millisecond {
			t.Logf("deadline: %s: the freeze took long: %v left to the deadline", label, left)
		}
	} else {
		e.fail(t, f)
		deadline = time.Now().Add(dlBudget)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		start(ctx)
	}

	var ret dlReturn
	hung := false
	select {
	case ret = <-res:
	case <-time.After(time.Until(deadline.Add(dlHang))):
		hung = true
		t.Errorf("deadline: %s: still running %v after its deadline: bringing Redis back", label, dlHang)
		e.restore(t)
		select {
		case ret = <-res:
		case <-time.After(time.Minute):
			t.Fatalf("deadline: %s: still running a minute after Redis came back", label)
		}
	}
	e.restore(t)
	back := time.Now()

	over := ret.at.Sub(deadline)
	t.Logf("deadline: %s overrun=%v hung=%v err=%v", label, over.Round(time.Millisecond), hung, ret.err)
	e.report.add(dlRow{target: e.tg.name, call: s.call, fault: f, over: over, hung: hung})
	ctl.Within(fmt.Sprintf("deadline: %s: returned after its deadline", label), over, dlBound)
	switch {
	case ret.err == nil:
		t.Errorf("deadline: %s: succeeded with Redis %s", label, f)
	case errors.Is(ret.err, context.DeadlineExceeded):
	case s.strict:
		t.Errorf("deadline: %s: error %q does not wrap the ctx's (context.DeadlineExceeded)", label, ret.err)
	case over >= -dlEarly:
		t.Errorf("deadline: %s: returned at its deadline with %q, which does not wrap the ctx's (context.DeadlineExceeded)", label, ret.err)
	default:
		// Failed before the deadline for a reason of its own: allowed.
	}

	call.after()
	e.checkFree(t, label, name, back)
}

// checkFree fails t unless, within a lease and a margin after Redis came
// back (back), a fresh Client's TryLock of name's write is granted, and
// then no holder, no waiter and no key of name are left but those that
// expire by themselves.
func (e *dlEnv) checkFree(t *testing.T, label, name string, back time.Time) {
	t.Helper()
	by := back.Add(dlLease + dlMargin)
	probe := e.prober(t, name)
	for {
		err := probe()
		if err == nil {
			break
		}
		if time.Now().After(by) {
			t.Errorf("deadline: %s: the lock is still taken %v after Redis came back (lease %v): %v; keys: %s",
				label, time.Since(back).Round(time.Millisecond), dlLease, err, e.describe(t, name))
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("deadline-free: %s free-after=%v", label, time.Since(back).Round(time.Millisecond))

	by = back.Add(2*dlLease + dlMargin)
	if e.tg.kind != dlQuorumKind {
		c := e.client(t)
		for {
			info, err := c.Inspect(itest.TestCtx(t), name)
			if err == nil && len(info.Holders)+len(info.WaitingWriters)+len(info.WaitingReaders) == 0 {
				break
			}
			if time.Now().After(by) {
				t.Errorf("deadline: %s: Inspect %v after Redis came back: %+v, %v; want no holder and no waiter",
					label, time.Since(back).Round(time.Millisecond), info, err)
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	for i, n := range e.nodes {
		for {
			left := dlKeysLeft(t, n.raw, name)
			if len(left) == 0 {
				break
			}
			if time.Now().After(by) {
				t.Errorf("deadline: %s: node %d: keys left %v after Redis came back: %s",
					label, i, time.Since(back).Round(time.Millisecond), e.describe(t, name))
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
}

// prober returns a fresh Client's (or Quorum's) attempt at name's write,
// given back at once when granted.
func (e *dlEnv) prober(t *testing.T, name string) func() error {
	t.Helper()
	var try func(ctx context.Context) (interface{ Unlock(context.Context) error }, error)
	switch e.tg.kind {
	case dlMutexKind:
		m := e.client(t).Mutex(name)
		try = func(ctx context.Context) (interface{ Unlock(context.Context) error }, error) { return m.TryLock(ctx) }
	case dlQuorumKind:
		m := e.quorum(t).RWMutex(name)
		try = func(ctx context.Context) (interface{ Unlock(context.Context) error }, error) { return m.TryLock(ctx) }
	default:
		m := e.client(t).RWMutex(name)
		try = func(ctx context.Context) (interface{ Unlock(context.Context) error }, error) { return m.TryLock(ctx) }
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l, err := try(ctx)
		if err != nil {
			return err
		}
		if err := l.Unlock(ctx); err != nil {
			return fmt.Errorf("the probe's Unlock: %w", err)
		}
		return nil
	}
}

// dlKeysLeft lists the keys of name on raw's server but those that expire
// by themselves: the last fencing token, give-up markers and unlock
// latches, each with a TTL.
func dlKeysLeft(t *testing.T, raw rueidis.Client, name string) []string {
	t.Helper()
	var left []string
	for _, k := range itest.FKeys(t, raw, name) {
		expires := strings.HasPrefix(k, fwire.OwnerMarkerPrefix+":") ||
			strings.HasPrefix(k, compat.UnlockLatchPrefix+":") ||
			k == fwire.Fence(name)
		if pttl := itest.FPTTL(t, raw, k); !expires || pttl == -1 {
			left = append(left, k)
		}
	}
	return left
}

// describe lists name's keys on every node, for failure reports.
func (e *dlEnv) describe(t *testing.T, name string) string {
	t.Helper()
	var b strings.Builder
	for i, n := range e.nodes {
		fmt.Fprintf(&b, "[node %d: %s] ", i, itest.FDescribe(t, n.raw, name))
	}
	return strings.TrimSpace(b.String())
}

// dlRow is one case's figure.
type dlRow struct {
	target, call string
	fault        dlFault
	over         time.Duration
	hung         bool
}

// dlReport collects every case's figure for the closing table.
type dlReport struct {
	mu   sync.Mutex
	rows []dlRow
}

func (r *dlReport) add(row dlRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row)
}

// log logs the worst overrun per call (rows) and target (columns), with
// the case it was measured in (a, b or c), one "deadline-worst:" line per
// row.
func (r *dlReport) log(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return
	}
	type cell struct {
		target, call string
	}
	worst := map[cell]dlRow{}
	seen := map[string]bool{}
	for _, row := range r.rows {
		k := cell{row.target, row.call}
		if w, ok := worst[k]; !ok || row.over > w.over {
			worst[k] = row
		}
		seen[row.target] = true
	}
	var targets []string
	for _, tg := range dlTargets() {
		if seen[tg.name] {
			targets = append(targets, tg.name)
		}
	}
	var calls []string
	have := map[string]bool{}
	for _, k := range []dlKind{dlRWKind, dlMutexKind, dlQuorumKind} {
		for _, s := range dlSpecsOf(k) {
			if !have[s.call] {
				have[s.call] = true
				calls = append(calls, s.call)
			}
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "call\t%s\t\n", strings.Join(targets, "\t"))
	for _, call := range calls {
		var cells []string
		filled := false
		for _, tg := range targets {
			w, ok := worst[cell{tg, call}]
			if !ok {
				cells = append(cells, "-")
				continue
			}
			filled = true
			s := fmt.Sprintf("%v(%c)", w.over.Round(time.Millisecond), w.fault[0])
			if w.hung {
				s += "HUNG"
			}
			cells = append(cells, s)
		}
		if filled {
			fmt.Fprintf(tw, "%s\t%s\t\n", call, strings.Join(cells, "\t"))
		}
	}
	_ = tw.Flush()
	t.Logf("deadline-worst: worst overrun past a %v deadline per call and target (case a-frozen, b-waiting, c-stopped); bound %v, goal 50ms", dlBudget, dlBound)
	for line := range strings.SplitSeq(strings.TrimRight(b.String(), "\n"), "\n") {
		t.Logf("deadline-worst: %s", line)
	}
}
