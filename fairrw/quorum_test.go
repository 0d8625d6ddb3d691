package fairrw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/fairrw/rwlock/internal/wire"
)

// quorumNodes starts n miniredis nodes and one Client on each, and returns
// a Quorum over them, all closed at cleanup.
func quorumNodes(t *testing.T, n int, policy fairrw.Policy, lease time.Duration, qopts ...fairrw.QuorumOption) (*fairrw.Quorum, []*miniredis.Miniredis) {
	t.Helper()
	var nodes []*miniredis.Miniredis
	var clients []*fairrw.Client
	for range n {
		mr, opt := redistest.Miniredis(t)
		c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(policy), fairrw.WithLeaseTime(lease),
			fairrw.WithUnlockTimeout(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, mr)
		clients = append(clients, c)
	}
	q, err := fairrw.NewQuorum(clients, append([]fairrw.QuorumOption{fairrw.WithNodeTimeout(500 * time.Millisecond)}, qopts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q, nodes
}

func quorumCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestQuorumLeaseIsALease: a QuorumRWMutex's Lease answers as a Lease does,
// has no single owner, and takes no further holds.
func TestQuorumLeaseIsALease(t *testing.T) {
	q, _ := quorumNodes(t, 3, fairrw.WriterPreferring(), 10*time.Second)
	ctx := quorumCtx(t)
	l, err := q.RWMutex("quorum:lease").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil || l.Token() == 0 || !time.Now().Before(l.Deadline()) || l.Owner() != "" || l.Context().Err() != nil {
		t.Fatalf("quorum lease: err %v token %d deadline %v owner %q", l.Err(), l.Token(), l.Deadline(), l.Owner())
	}
	if hidden.Name(l) != "quorum:lease" || hidden.Mode(l) != fairrw.Write || hidden.LeaseNodes(l) != 3 {
		t.Fatalf("quorum lease: name %q mode %v nodes %d", hidden.Name(l), hidden.Mode(l), hidden.LeaseNodes(l))
	}
	for name, further := range map[string]func(context.Context, ...fairrw.AcquireOption) (*fairrw.Lease, error){"Lock": l.Lock, "RLock": l.RLock} {
		if nl, err := further(ctx); nl != nil || !errors.Is(err, fairrw.ErrInvalidOption) {
			t.Fatalf("%s from a quorum lease: %v, %v, want ErrInvalidOption", name, nl, err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done open after Unlock")
	}
	if err := l.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
}

// TestQuorumExclusion: under every policy, a write quorum excludes reads and
// writes of other owners (on its own handle too), readers share, and a release lets the next in.
func TestQuorumExclusion(t *testing.T) {
	for _, p := range locktest.Policies() {
		t.Run(p.String(), func(t *testing.T) {
			q, _ := quorumNodes(t, 3, p, 10*time.Second)
			ctx := quorumCtx(t)
			a, b := q.RWMutex("q:excl"), q.RWMutex("q:excl")
			w, err := a.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if hidden.LeaseNodes(w) != 3 {
				t.Errorf("write held on %d nodes, want 3", hidden.LeaseNodes(w))
			}
			for _, h := range []*fairrw.QuorumRWMutex{a, b} { // the holder's handle is no owner
				if _, err := h.TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
					t.Fatalf("TryLock under a write quorum: %v, want ErrNotAcquired", err)
				}
			}
			if _, err := b.TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryRLock under a write quorum: %v, want ErrNotAcquired", err)
			}
			got := make(chan *fairrw.Lease, 1)
			go func() {
				l, err := b.RLock(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- l
			}()
			select {
			case <-got:
				t.Fatal("a read quorum was granted under a write quorum")
			case <-time.After(100 * time.Millisecond):
			}
			if err := w.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			r1 := <-got
			if r1 == nil {
				t.FailNow()
			}
			r2, err := q.RWMutex("q:excl").TryRLock(ctx)
			if err != nil {
				t.Fatalf("a second reader: %v", err)
			}
			if _, err := a.TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("TryLock under read quorums: %v, want ErrNotAcquired", err)
			}
			for _, l := range []*fairrw.Lease{r1, r2} {
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
				t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestQuorumMinorityDown: with one node of three down, a grant still needs
// and gets the two others; with two down, nothing is granted and nothing
// stays behind on the node left.
func TestQuorumMinorityDown(t *testing.T) {
	q, nodes := quorumNodes(t, 3, fairrw.Redisson(), 10*time.Second, fairrw.WithNodeTimeout(200*time.Millisecond))
	ctx := quorumCtx(t)
	nodes[0].Close()
	l, err := q.RWMutex("q:down").Lock(ctx)
	if err != nil {
		t.Fatalf("one node down: %v", err)
	}
	if hidden.LeaseNodes(l) != 2 {
		t.Errorf("held on %d nodes, want 2", hidden.LeaseNodes(l))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	nodes[1].Close()
	if _, err := q.RWMutex("q:down").TryLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("two nodes down: %v, want ErrNotAcquired", err)
	}
	short, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	if _, err := q.RWMutex("q:down").Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with two nodes down: %v, want DeadlineExceeded", err)
	}
	if err := q.Close(); err != nil { // the late attempts have given back their holds
		t.Fatal(err)
	}
	eventuallyNoLockKeys(t, nodes[2])
}

// eventuallyNoLockKeys fails unless, within a second, the node is left
// with no key but the last fencing token and given-up owners' markers, each
// with a TTL (nothing of a lock outlives its lease): unlock latches are
// deleted right after their unlock, by a janitor of the Client.
func eventuallyNoLockKeys(t *testing.T, node *miniredis.Miniredis) {
	t.Helper()
	var left []string
	for range 100 {
		left = left[:0]
		for _, k := range node.Keys() {
			fence := strings.HasPrefix(k, wire.FairPrefix+":") && strings.HasSuffix(k, ":fence")
			marker := strings.HasPrefix(k, wire.OwnerMarkerPrefix+":")
			if (fence || marker) && node.TTL(k) > 0 {
				continue
			}
			left = append(left, k)
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("keys left on the live node: %v", left)
}

// TestQuorumNodeLostWhileHeld: a watchdog lease held on three nodes
// survives the loss of one (renewed on the two left) and is reported lost
// when a second goes.
func TestQuorumNodeLostWhileHeld(t *testing.T) {
	t.Parallel() // on servers of its own; it waits out leases
	// Each node's lease is renewed every third of it: 2 s leaves a loaded
	// machine more than a second of lateness (900 ms leases were lost once
	// with two suites side by side, two nodes alive).
	const lease = 2 * time.Second
	q, nodes := quorumNodes(t, 3, fairrw.WriterPreferring(), lease)
	ctx := quorumCtx(t)
	l, err := q.RWMutex("q:lost").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nodes[2].Close()
	select {
	case <-l.Done():
		t.Fatalf("lost with two of three nodes alive: %v", l.Err())
	case <-time.After(3 * lease):
	}
	if n := hidden.LeaseNodes(l); n != 2 {
		t.Errorf("held on %d nodes after one died, want 2", n)
	}
	nodes[1].Close()
	select {
	case <-l.Done():
		if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
			t.Fatalf("Err = %v, want ErrLeaseLost", l.Err())
		}
	case <-time.After(3 * lease):
		t.Fatal("not reported lost with one node of three left")
	}
	if err := l.Unlock(ctx); !errors.Is(err, fairrw.ErrNotHeld) {
		t.Fatalf("Unlock of a lost lease: %v, want ErrNotHeld", err)
	}
	// The hold left on the live node was given back.
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	eventuallyNoLockKeys(t, nodes[0])
}

// TestQuorumTokensMonotonic: nodes whose last tokens drifted apart (one
// node's far ahead, as after a clock step) do not make tokens go back: a
// grant's token exceeds the highest node's, and raises the others' to it, so
// a later majority without the node ahead still goes higher.
func TestQuorumTokensMonotonic(t *testing.T) {
	q, nodes := quorumNodes(t, 3, fairrw.PhaseFair(), 10*time.Second)
	ctx := quorumCtx(t)
	const name = "q:fence"
	// A token a day ahead of the clock-based ones (microseconds), kept as
	// the library keeps the last token: with a TTL.
	ahead := uint64(time.Now().Add(24 * time.Hour).UnixMicro())
	if err := nodes[0].Set(wire.Fence(name), strconv.FormatUint(ahead, 10)); err != nil {
		t.Fatal(err)
	}
	nodes[0].SetTTL(wire.Fence(name), 20*time.Second)
	m := q.RWMutex(name)
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Token() <= ahead {
		t.Errorf("first token %d, not above the highest node's %d", first.Token(), ahead)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes[1:] {
		if n.TTL(wire.Fence(name)) <= 0 {
			t.Errorf("node %d: %s has TTL %v, want a TTL", i+1, wire.Fence(name), n.TTL(wire.Fence(name)))
		}
	}
	nodes[0].Close()
	second, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.Token() <= first.Token() {
		t.Errorf("second token %d not above the first %d", second.Token(), first.Token())
	}
	if _, err := q.RWMutex(name).TryRLock(ctx); !errors.Is(err, fairrw.ErrNotAcquired) {
		t.Fatalf("read under the write: %v, want ErrNotAcquired", err)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	third, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third.Token() <= second.Token() {
		t.Errorf("third token %d not above the second %d", third.Token(), second.Token())
	}
	if err := third.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQuorumHammer: writers over three nodes never overlap, and every one
// gets through (contending rounds that split the nodes back off and retry),
// whether each goroutine has its handle or all share one (every acquire is
// a new owner).
func TestQuorumHammer(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "handles", true: "shared"}[shared], func(t *testing.T) {
			q, _ := quorumNodes(t, 3, fairrw.Redisson(), 10*time.Second)
			ctx := quorumCtx(t)
			one := q.RWMutex("q:hammer")
			var inside, done atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := one
					if !shared {
						m = q.RWMutex("q:hammer")
					}
					for range 5 {
						l, err := m.Lock(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						if inside.Add(1) != 1 {
							t.Error("two writers inside at once")
						}
						time.Sleep(time.Millisecond)
						inside.Add(-1)
						if err := l.Unlock(ctx); err != nil {
							t.Error(err)
						}
						done.Add(1)
					}
				}()
			}
			wg.Wait()
			if done.Load() != 20 {
				t.Fatalf("%d of 20 write holds completed", done.Load())
			}
		})
	}
}

// TestNewQuorumRefusesBadInput: invalid clients and options are refused
// before anything is sent.
func TestNewQuorumRefusesBadInput(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	mk := func(opts ...fairrw.Option) *fairrw.Client {
		c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b := mk(), mk()
	closed := mk()
	_ = closed.Close()
	for name, tc := range map[string]struct {
		clients []*fairrw.Client
		opts    []fairrw.QuorumOption
	}{
		"none":           {nil, nil},
		"nil client":     {[]*fairrw.Client{a, nil}, nil},
		"twice":          {[]*fairrw.Client{a, a}, nil},
		"policies":       {[]*fairrw.Client{a, mk(fairrw.WithPolicy(fairrw.Redisson()))}, nil},
		"lease times":    {[]*fairrw.Client{a, mk(fairrw.WithLeaseTime(time.Second))}, nil},
		"closed":         {[]*fairrw.Client{a, closed}, nil},
		"node timeout":   {[]*fairrw.Client{a, b}, []fairrw.QuorumOption{fairrw.WithNodeTimeout(0)}},
		"drift":          {[]*fairrw.Client{a, b}, []fairrw.QuorumOption{fairrw.WithClockDrift(0.9)}},
		"nil option":     {[]*fairrw.Client{a, b}, []fairrw.QuorumOption{nil}},
		"negative drift": {[]*fairrw.Client{a, b}, []fairrw.QuorumOption{fairrw.WithClockDrift(-0.1)}},
	} {
		if _, err := fairrw.NewQuorum(tc.clients, tc.opts...); !errors.Is(err, fairrw.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	q, err := fairrw.NewQuorum([]*fairrw.Client{a, b})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if hidden.Majority(q) != 2 || hidden.QuorumNodes(q) != 2 {
		t.Errorf("2 nodes: majority %d of %d, want 2 of 2", hidden.Majority(q), hidden.QuorumNodes(q))
	}
	if _, err := q.RWMutex("").Lock(context.Background()); !errors.Is(err, fairrw.ErrInvalidName) {
		t.Errorf("empty name: %v, want ErrInvalidName", err)
	}
	raw, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if n, _ := raw.Do(context.Background(), raw.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("bad input left %d keys", n)
	}
}

// TestQuorumWaitsWhileANodeClientCloses: a Quorum's waiter joins its
// nodes' wake-up registries without entering their Clients' calls, so a
// node's Client may close while a Lock of the Quorum waits or is about to:
// the wait ends (the Client's close, or its ctx), and -race sees no
// subscription started on a registry that its close is waiting out (the
// conformance test's Shutdowns found that).
func TestQuorumWaitsWhileANodeClientCloses(t *testing.T) {
	var opts []rueidis.ClientOption
	var holders []*fairrw.Client
	for range 3 {
		_, opt := redistest.Miniredis(t)
		opts = append(opts, opt)
		c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(fairrw.PhaseFair()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		holders = append(holders, c)
	}
	held, err := fairrw.NewQuorum(holders)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Close() })
	w, err := held.RWMutex("qclose").Lock(quorumCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Unlock(context.Background()) }()
	for i := range 40 {
		var clients []*fairrw.Client
		for _, opt := range opts {
			c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithPolicy(fairrw.PhaseFair()))
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		q, err := fairrw.NewQuorum(clients)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		done := make(chan error, 1)
		if i%2 == 0 { // shut down as the Lock starts: its waiter may join a closing registry
			go func() { _ = clients[i%3].Shutdown(ctx) }()
		}
		go func() {
			_, err := q.RWMutex("qclose").RLock(ctx)
			done <- err
		}()
		time.Sleep(time.Duration(i%8) * time.Millisecond)
		_ = clients[i%3].Close()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("round %d: RLock granted while the write is held", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: RLock did not return within 10s of its ctx's 2s", i)
		}
		cancel()
		_ = q.Close()
		for _, c := range clients {
			_ = c.Close()
		}
	}
}

// TestQuorumWaitsWhileANodeConnects: a node's Client still connecting in
// the background (its Redis accepts connections and never answers) does
// not keep a waiting quorum Lock from its grant on the two other nodes
// once the holder releases: the waiter's subscription on that node waits
// for its connection rather than reading a Client with no Redis yet (it
// panicked, in the conformance test's quorum beside a paused node).
func TestQuorumWaitsWhileANodeConnects(t *testing.T) {
	t.Parallel() // on servers of its own; it waits on connects
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	// Run last, once the Clients closed their connections to it.
	t.Cleanup(func() { _ = silent.Close(); conns.Wait() })
	conns.Go(func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { _, _ = io.Copy(io.Discard, c) }) // reads, never answers
		}
	})
	var clients, others []*fairrw.Client
	for i := range 3 {
		opt := rueidis.ClientOption{InitAddress: []string{silent.Addr().String()}, ConnWriteTimeout: 200 * time.Millisecond}
		if i > 0 {
			_, opt = redistest.Miniredis(t)
			o, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLeaseTime(10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Close() })
			others = append(others, o)
		}
		c, err := fairrw.New(fairrw.WithClientOption(opt), fairrw.WithLeaseTime(10*time.Second), fairrw.WithConnectTimeout(500*time.Millisecond))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	q, err := fairrw.NewQuorum(clients, fairrw.WithNodeTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	holder, err := fairrw.NewQuorum(append([]*fairrw.Client{clients[0]}, others...), fairrw.WithNodeTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := quorumCtx(t)
	held, err := holder.RWMutex("q:connecting").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := q.RWMutex("q:connecting").Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond) // the waiter joins every node's waiters
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("quorum Lock with one node still connecting: %v", err)
	}
}
