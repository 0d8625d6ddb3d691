package itest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
)

const (
	// confShutdownTimeout is the ctx of a Shutdown.
	confShutdownTimeout = 2 * time.Second
	// confShutdownBound is how soon a waiter of another Client is granted
	// once a Shutdown returned nil, when the Shutdown's releases were all
	// that held it (no fault nearby, nobody else holding, no grant since):
	// much shorter than the leases the releases cut short.
	confShutdownBound = 700 * time.Millisecond
)

// confGen is one generation of a slot.
type confGen struct {
	slot, n int
	label   string           // "c1" for the first generation, then "c1#2", "c1#3"…
	Client  *fairrw.Client   // RWMutex and Mutex targets
	nodes   []*fairrw.Client // quorum target
	Quorum  *fairrw.Quorum
	// probeQuorum is the stranded-hold probe's quorum over the same nodes,
	// with a node timeout of a second: the probe asks whether a node holds
	// the name, not how fast it answers (with two suites side by side, a
	// probe of the workload's quorum, 250 ms, was granted on 0 of 3 nodes
	// that held nothing).
	probeQuorum *fairrw.Quorum
	synced      bool                         // its Client acquires under WithSyncReplicas
	rw          map[string][]*fairrw.RWMutex // shared handles, by name
	mx          map[string][]*fairrw.Mutex
	qrw         map[string][]*fairrw.QuorumRWMutex

	// Guarded by the oracle's mu.
	holds     []*confHold // every lease it granted
	stopBegan time.Time   // Shutdown or Close called (zero: in use)
	stopEnded time.Time
	graceful  bool
	stopErr   error
}

// confSlot is the connection of a slot and its current generation.
type confSlot struct {
	bases []rueidis.ClientOption // one per node (through the slot's proxies)
	Tr    Transport
	opts  []fairrw.Option // the slot's own options (WithSyncReplicas), after the common ones
	cur   *confGen        // guarded by confEnv.slotMu
}

// confHandlesPerGen is how many shared handles of each name a generation has.
const confHandlesPerGen = 2

// gen returns slot i's current generation.
func (e *confEnv) gen(i int) *confGen {
	e.slotMu.Lock()
	defer e.slotMu.Unlock()
	return e.slots[i].cur
}

// dial makes a Client over base. A replacement may be made during any
// fault: the slot's proxy stalled or reset, its server paused, frozen or
// busy in a script (connection-start faults, issue 31). None is New's
// error: New returns a Client that connects once Redis serves, so an
// error is a violation.
func (e *confEnv) dial(base rueidis.ClientOption, tr Transport, extra []fairrw.Option) (*fairrw.Client, error) {
	opt := base
	tr.Mutate(&opt)
	start := time.Now()
	c, err := fairrw.New(append(append([]fairrw.Option{fairrw.WithClientOption(opt)}, e.opts...), extra...)...)
	if err != nil {
		e.o.violate("connect/new-failed", "", "New called at %s failed at %s: %v", e.o.At(start), e.o.At(time.Now()), err)
		return nil, err
	}
	e.slotMu.Lock()
	e.closers = append(e.closers, c.Close)
	e.slotMu.Unlock()
	return c, nil
}

// newGen makes generation n of slot i, with its handles.
func (e *confEnv) newGen(i, n int) (*confGen, error) {
	s := e.slots[i]
	prefix := "c"
	if e.tg.Kind == ConfQuorumKind {
		prefix = "q"
	}
	g := &confGen{slot: i, n: n, label: fmt.Sprintf("%s%d", prefix, i), synced: len(s.opts) > 0,
		rw: map[string][]*fairrw.RWMutex{}, mx: map[string][]*fairrw.Mutex{}, qrw: map[string][]*fairrw.QuorumRWMutex{}}
	if n > 0 {
		g.label += fmt.Sprintf("#%d", n+1)
	}
	for _, b := range s.bases {
		c, err := e.dial(b, s.Tr, s.opts)
		if err != nil {
			for _, c := range g.nodes {
				_ = c.Close()
			}
			return nil, err
		}
		g.nodes = append(g.nodes, c)
	}
	if e.tg.Kind == ConfQuorumKind {
		// The workload's quorum, and the probe's over the same nodes.
		for _, q := range []struct {
			to      **fairrw.Quorum
			timeout time.Duration
		}{{&g.Quorum, 250 * time.Millisecond}, {&g.probeQuorum, time.Second}} {
			made, err := fairrw.NewQuorum(g.nodes, fairrw.WithNodeTimeout(q.timeout))
			if err != nil {
				return nil, err
			}
			e.slotMu.Lock()
			e.closers = append(e.closers, made.Close)
			e.slotMu.Unlock()
			*q.to = made
		}
	} else {
		g.Client = g.nodes[0]
	}
	for _, name := range e.Names {
		for range confHandlesPerGen {
			switch e.tg.Kind {
			case ConfQuorumKind:
				g.qrw[name] = append(g.qrw[name], g.Quorum.RWMutex(name))
			case ConfMutexKind:
				g.mx[name] = append(g.mx[name], g.Client.Mutex(name))
			default:
				g.rw[name] = append(g.rw[name], g.Client.RWMutex(name))
			}
		}
	}
	return g, nil
}

// sharedAcquire is an acquire on shared handle hi of name in g: every call
// a new owner.
func (g *confGen) sharedAcquire(ctx context.Context, name string, hi int, mode fairrw.Mode, wait bool, o []fairrw.AcquireOption) (confLease, string, error) {
	switch {
	case g.Quorum != nil:
		l, err := confQuorumAcquire(ctx, g.qrw[name][hi], mode, wait, o)
		if err != nil {
			return nil, "", err
		}
		return l, "", nil
	case len(g.mx) > 0:
		l, err := confMutexAcquire(ctx, g.mx[name][hi], wait, o)
		if err != nil {
			return nil, "", err
		}
		return l, l.Owner(), nil
	default:
		l, err := confRWAcquire(ctx, g.rw[name][hi], mode, wait, o)
		if err != nil {
			return nil, "", err
		}
		return l, l.Owner(), nil
	}
}

// stopper shuts a slot's generation down every 1.5-4s and replaces it.
// One in five stops is an abrupt Close instead (once two Shutdowns ran):
// its holds are left to expire, as a crash leaves them, and it is
// recorded as a fault until they have.
func (e *confEnv) stopper(ctx context.Context, rng *rand.Rand) {
	next := time.Now().Add(1500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second))))
	graceful := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		if e.isStopped() {
			return
		}
		// An abrupt stop's holds outlive it by up to the longest lease:
		// none near the end, so that the final probes find them gone.
		abrupt := graceful >= 2 && rng.IntN(100) < 20 && time.Until(e.workEnd) > confLongMax+2*time.Second
		first := !abrupt && graceful < 2
		if !abrupt {
			graceful++
		}
		e.stopAndReplace(rng, e.pickStopSlot(rng, first), !abrupt)
		next = time.Now().Add(1500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond))))
	}
}

// pickStopSlot picks, mostly, the slot whose generation has the most live
// leases, so that the stops have work to end; the first two graceful stops
// always do, waiting up to three seconds for a lease that the Shutdown will
// be the one to end (stoppableOf: not being unlocked, not about to run
// out), so that every run has a Shutdown end a lease (checkExercised).
func (e *confEnv) pickStopSlot(rng *rand.Rand, first bool) int {
	if !first && rng.IntN(100) < 30 {
		return rng.IntN(len(e.slots))
	}
	live := e.o.liveOf
	if first {
		live = e.o.stoppableOf
	}
	wait := time.Now().Add(3 * time.Second)
	for {
		best, most := rng.IntN(len(e.slots)), -1
		for i := range e.slots {
			g := e.gen(i)
			if n := live(g); n > most {
				best, most = i, n
			}
		}
		if most > 0 || !first || time.Now().After(wait) {
			return best
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopAndReplace shuts slot i's generation down (gracefully or not),
// hands the outcome to the oracle and puts a new generation in the slot.
// One Shutdown in five has a short deadline (10-400ms), which it must
// return by, whatever it has left to release.
func (e *confEnv) stopAndReplace(rng *rand.Rand, i int, graceful bool) {
	g := e.gen(i)
	timeout, short := confShutdownTimeout, ""
	if graceful && rng.IntN(100) < 20 {
		timeout = 10*time.Millisecond + time.Duration(rng.Int64N(int64(390*time.Millisecond)))
		short = fmt.Sprintf(" (deadline %v)", timeout.Round(time.Millisecond))
	}
	e.o.stopBegins(g, graceful)
	began := time.Now()
	var err error
	if graceful {
		cc := e.deadlineCtx(context.Background(), timeout)
		err = confEach(g.nodes, func(c *fairrw.Client) error { return c.Shutdown(cc.ctx) })
		e.o.callReturned("Shutdown", cc, began, time.Now(), err, g.label+" Shutdown"+short)
		cc.cancel()
	} else {
		err = confEach(g.nodes, (*fairrw.Client).Close)
	}
	if g.Quorum != nil {
		_ = g.Quorum.Close()
	}
	e.o.stopEnds(g, began, time.Now(), err)
	ng, nerr := e.newGen(i, g.n+1)
	if nerr != nil {
		e.o.count("replacements failed", 1)
		e.T.Logf("%s: replacing %s: %v (the slot keeps the stopped generation)", e.tg.Name, g.label, nerr)
		return
	}
	e.slotMu.Lock()
	e.slots[i].cur = ng
	e.slotMu.Unlock()
}

// confEach runs f on every Client at once and joins the errors.
func confEach(cs []*fairrw.Client, f func(*fairrw.Client) error) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
