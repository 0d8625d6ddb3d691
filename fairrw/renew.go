package fairrw

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// maxRenewBatch is the most holds one renewal script call carries, as
// Redisson's batched renewal: large enough that 10,000 leases take 100 calls
// in one round trip, small enough that one call never blocks Redis for long.
const maxRenewBatch = 100

// renewer is the Client's single watchdog. Every renewInterval it renews all
// the watchdog leases the Client holds: grouped by (lock, owner, mode), then
// by cluster slot, in script calls of at most maxRenewBatch holds, sent in
// one DoMulti round trip on a single Redis and in one per shard on a
// cluster, each confirming its leases as its answers come. It also tracks
// every live lease, so Close can end them.
type renewer struct {
	c      *Client
	mu     sync.Mutex
	leases map[*Lease]struct{}
	ctx    context.Context // ends with close: a round in flight is abandoned
	stop   context.CancelFunc
	done   chan struct{}
	calls  sync.WaitGroup // the rounds' DoMulti calls and views of the shards, which may outlast their round
	shards shardView      // on a cluster, which primary serves each slot
}

func newRenewer(c *Client) *renewer {
	ctx, stop := context.WithCancel(context.Background())
	r := &renewer{c: c, leases: make(map[*Lease]struct{}), ctx: ctx, stop: stop, done: make(chan struct{})}
	go r.run()
	return r
}

func (r *renewer) add(l *Lease) {
	r.mu.Lock()
	r.leases[l] = struct{}{}
	r.mu.Unlock()
}

func (r *renewer) remove(l *Lease) {
	r.mu.Lock()
	delete(r.leases, l)
	r.mu.Unlock()
}

// run starts a round every renewInterval (counted from the start of the
// previous one, so a long round does not stretch the period), and sooner
// after a failed round: a lease must be confirmed before its deadline, and a
// round can fail for a moment.
func (r *renewer) run() {
	defer close(r.done)
	retry := min(r.c.settings().renewInterval, time.Second)
	t := time.NewTimer(r.c.settings().renewInterval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		err := r.round()
		next := r.c.settings().renewInterval - time.Since(start)
		if err != nil {
			next = min(next, retry)
		}
		t.Reset(max(next, 0))
	}
}

// renewHold is one (lock, owner, mode) and the leases that stand on it.
type renewHold struct {
	m      *RWMutex
	owner  string // the leases' owner, not the handle's current one
	mode   Mode
	leases []*Lease
}

type holdKey struct {
	name, owner string
	mode        Mode
}

// round renews every watchdog lease once. It returns an error if any batch
// failed; the leases of a failed batch keep their deadlines and are lost if
// no later round confirms them in time.
func (r *renewer) round() error {
	sent := time.Now()
	r.c.heldOwners().prune(sent)
	holds := r.snapshot()
	if len(holds) == 0 {
		return nil
	}
	// A renewal may reach Redis as late as the accept window, and keep the
	// hold a lease from then, whatever its answer says.
	keep := sent.Add(r.c.acceptWindow() + r.c.settings().leaseTime + leaseMargin)
	for _, h := range holds {
		h.leases[0].own.extendKeep(keep)
	}
	calls, batches := r.batches(holds)
	parts := r.parts(calls, batches)
	if r.c.onCluster() {
		r.refreshShards(false)
	}
	// Each part is one DoMulti, which returns only when every call in it
	// has its answer, and confirms its holds as soon as it has them: on a
	// cluster a part is one shard's (see parts), so that a shard that does
	// not answer holds back only its own holds' confirmations, never
	// another shard's (one DoMulti for the round once left the live
	// shards' leases half their margin while a killed primary's calls
	// retried). The round waits one renew interval for its parts, then
	// reports those unanswered, and the next round starts on time. The
	// calls go on: on one server (or Sentinel's primary), until the
	// leases' own length has passed, so that a slow Redis's late answers
	// still confirm (as sent + lease, whenever they come: a lease never
	// outlasts what Redis was asked to keep). On a cluster a dead shard's
	// calls retry until their context ends, so there they end with the
	// interval, and the dead shard's leases are lost at their deadline. A
	// call given up costs nothing on Redis: one that ran renewed, and its
	// answer is dropped. Timers, not deadlines, so that Close ends a round
	// under way (see withTimer).
	interval := r.c.settings().renewInterval
	bound := r.c.settings().leaseTime
	if r.c.onCluster() {
		bound = interval
	}
	callCtx, cancelCalls := withTimer(r.ctx, bound)
	outcomes := make(chan renewOutcome) // taken only while the round waits
	gaveUp := make(chan struct{})       // closed once it stopped waiting
	var running atomic.Int32            // the last part to end cancels the calls' timer
	running.Store(int32(len(parts)))
	for _, p := range parts {
		r.calls.Add(1)
		go func() {
			defer r.calls.Done()
			results := script.Batch(callCtx, r.c.redis(), p.calls)
			timedOut := callCtx.Err() != nil
			if running.Add(-1) == 0 {
				cancelCalls()
			}
			if r.ctx.Err() != nil {
				return // after Close, nothing is left to confirm
			}
			o := r.apply(sent, p.batches, results, timedOut)
			select {
			case outcomes <- o:
			case <-gaveUp:
				// A late answer confirms what it can; the round was
				// reported failed already.
				r.loseMadeOn(o.lost)
			}
		}()
	}
	// On a cluster too: a part whose call outlasts its context (a
	// reconnect's handshake is bounded by the dial timeout alone) must not
	// hold back the next round.
	wait := time.NewTimer(interval)
	defer wait.Stop()
	var all renewOutcome
	var failed error
	for range parts {
		select {
		case o := <-outcomes:
			all.add(o)
			continue
		case <-r.ctx.Done():
			close(gaveUp)
			return r.ctx.Err() // Close abandoned the round: no failure of Redis's
		case <-wait.C:
			close(gaveUp)
		}
		// Parts unanswered within the interval: they are reported failed
		// now (an operator sees a Redis too slow to renew), with what the
		// others' answers did.
		unanswered := leaseCount(batches...) - all.leases
		all.leases += unanswered
		all.failedLeases += unanswered
		all.failedCalls += len(calls) - all.calls
		if all.failed == nil { // an answer's own failure says more
			all.failed, all.timedOut = errRoundTimeout, true
		}
		break
	}
	r.loseMadeOn(all.lost)
	if all.failed != nil {
		if r.ctx.Err() != nil {
			return all.failed // Close abandoned the round: no failure of Redis's
		}
		failed = r.failure(all.timedOut, all.failed)
		if r.c.onCluster() {
			// Slots may have moved: until a new view is taken, the
			// rounds go per slot, so that a stale view cannot keep live
			// slots in a part with a shard that does not answer.
			r.shards.forget()
			r.refreshShards(true)
		}
	}
	// Leases found gone were sent but not renewed.
	r.c.telemetry().renewRound(sent, all.leases-all.gone, len(calls), all.failedCalls, all.failedLeases, failed)
	return failed
}

// renewPart is the calls of a round that go in one DoMulti, and the holds
// each call renews.
type renewPart struct {
	calls   []script.Call
	batches [][]*renewHold
}

// parts cuts a round's calls into its DoMultis: all in one on a single
// Redis; on a cluster one per shard, as the renewer's view of the cluster
// has them, and one per slot the view does not know (see shardView).
func (r *renewer) parts(calls []script.Call, batches [][]*renewHold) []renewPart {
	if !r.c.onCluster() {
		return []renewPart{{calls: calls, batches: batches}}
	}
	slots := make([]uint16, len(calls))
	for i := range calls {
		slots[i] = batches[i][0].m.keys.slot
	}
	shards := r.shards.shardsOf(slots)
	var parts []renewPart
	index := make(map[int32]int) // shard, or -1 - slot, -> its part
	for i, call := range calls {
		k := shards[i]
		if k < 0 {
			k = -1 - int32(slots[i])
		}
		j, ok := index[k]
		if !ok {
			j = len(parts)
			index[k] = j
			parts = append(parts, renewPart{})
		}
		parts[j].calls = append(parts[j].calls, call)
		parts[j].batches = append(parts[j].batches, batches[i])
	}
	return parts
}

// renewOutcome is what a part's answers did: its calls and leases (every
// one sent), those found gone, the calls and leases whose calls failed, the
// first failure (and whether the calls' bound had passed by then), and the
// holds found gone.
type renewOutcome struct {
	calls, leases, gone, failedCalls, failedLeases int
	failed                                         error
	timedOut                                       bool
	lost                                           map[ownerMode]error
}

// add counts o into the round's outcome.
func (a *renewOutcome) add(o renewOutcome) {
	a.calls += o.calls
	a.leases += o.leases
	a.gone += o.gone
	a.failedCalls += o.failedCalls
	a.failedLeases += o.failedLeases
	if a.failed == nil && o.failed != nil {
		a.failed, a.timedOut = o.failed, o.timedOut
	}
	for k, err := range o.lost {
		if a.lost == nil {
			a.lost = make(map[ownerMode]error)
		}
		a.lost[k] = err
	}
}

// apply applies a part's answers: each hold's leases confirmed as sent +
// lease, or lost if Redis found the hold gone. The Leases that stand on a
// hold found gone with no Redis call of their own are left to loseMadeOn:
// once per round for the parts answered within it, once per part for
// those answered later.
func (r *renewer) apply(sent time.Time, batches [][]*renewHold, results []rueidis.RedisResult, timedOut bool) renewOutcome {
	o := renewOutcome{calls: len(results)}
	for i, res := range results {
		n := leaseCount(batches[i])
		o.leases += n
		alive, err := wire.DecodeRenew(res, len(batches[i]))
		if err != nil {
			if o.failed == nil {
				o.failed, o.timedOut = err, timedOut
			}
			o.failedCalls++
			o.failedLeases += n
			continue
		}
		for j, h := range batches[i] {
			if alive[j] {
				h.confirm(sent.Add(r.c.settings().leaseTime))
				continue
			}
			o.gone += len(h.leases)
			err := fmt.Errorf("%w: %q: the renewal found the hold gone", ErrLeaseLost, h.m.keys.name)
			h.lose(err, lossGone)
			if o.lost == nil {
				o.lost = make(map[ownerMode]error)
			}
			o.lost[ownerMode{h.leases[0].own, h.mode}] = err
		}
	}
	return o
}

// leaseCount is how many leases stand on the holds of batches.
func leaseCount(batches ...[]*renewHold) int {
	n := 0
	for _, b := range batches {
		for _, h := range b {
			n += len(h.leases)
		}
	}
	return n
}

// errRoundTimeout is a round's calls unanswered within its interval.
var errRoundTimeout = errors.New("fairrw: renewal round unanswered within its interval")

// failure is a failed round's error, naming the Redis and the cause: no
// answer within the round's bound (timedOut), Redis unavailable, or what
// Redis answered. A bare "context canceled" would tell an operator nothing.
func (r *renewer) failure(timedOut bool, err error) error {
	c := r.c
	switch {
	case timedOut:
		return tag(fmt.Sprintf("fairrw: renewal: no answer from Redis at %s within %v", c.address(), c.settings().renewInterval), errRedisTimeout, err)
	case redisDown(err):
		return tag(fmt.Sprintf("fairrw: renewal: Redis at %s unavailable: %v", c.address(), err), ErrUnavailable, err)
	}
	return tag(fmt.Sprintf("fairrw: renewal at %s: %s", c.address(), reason(err)), err)
}

// snapshot groups the renewable leases by hold.
func (r *renewer) snapshot() []*renewHold {
	r.mu.Lock()
	defer r.mu.Unlock()
	byKey := make(map[holdKey]*renewHold)
	var holds []*renewHold
	for l := range r.leases {
		if !l.renewable() {
			continue
		}
		k := holdKey{l.m.keys.name, l.own.id, l.mode}
		h := byKey[k]
		if h == nil {
			h = &renewHold{m: l.m, owner: l.own.id, mode: l.mode}
			byKey[k] = h
			holds = append(holds, h)
		}
		h.leases = append(h.leases, l)
	}
	return holds
}

// batches splits holds into script calls of at most maxRenewBatch holds
// each; a call's holds share one policy's renewal script (a Client's
// RWMutex and Mutex handles renew differently) and, on a cluster, one slot
// (a script's keys must). On a single Redis holds of any slot go together:
// grouping by slot there would cost one call per lock for names without a
// shared hash tag.
func (r *renewer) batches(holds []*renewHold) ([]script.Call, [][]*renewHold) {
	type group struct {
		script string
		slot   uint16
	}
	groupOf := func(h *renewHold) group {
		g := group{script: h.m.policy.renewScript().Name()}
		if r.c.onCluster() {
			g.slot = h.m.keys.slot
		}
		return g
	}
	sort.Slice(holds, func(i, j int) bool {
		gi, gj := groupOf(holds[i]), groupOf(holds[j])
		if gi.script != gj.script {
			return gi.script < gj.script
		}
		return gi.slot < gj.slot
	})
	var calls []script.Call
	var batches [][]*renewHold
	named := renewKeys(holds) // one slice for the round, cut per batch
	for i := 0; i < len(holds); {
		g, end := groupOf(holds[i]), i+1
		for end < len(holds) && groupOf(holds[end]) == g && end-i < maxRenewBatch {
			end++
		}
		batch := holds[i:end:end]
		p := batch[0].m.policy
		keys, args := p.renew(r.c.settings().leaseTime, named[i:end:end]) // confirmed locally as sent + leaseTime
		i = end
		calls = append(calls, script.Call{Script: p.renewScript(), Keys: keys, Args: args})
		batches = append(batches, batch)
	}
	return calls, batches
}

// renewKeys is what the renewal scripts name of each of holds, in order.
func renewKeys(holds []*renewHold) []renewKey {
	named := make([]renewKey, len(holds))
	for i, h := range holds {
		_, mutex := h.m.policy.(mutexPolicy)
		named[i] = renewKey{keys: &h.m.keys, owner: h.owner, mode: h.mode, mutex: mutex}
	}
	return named
}

func (h *renewHold) confirm(deadline time.Time) {
	for _, l := range h.leases {
		l.confirm(deadline)
	}
}

// ownerMode is one owner's hold of one mode.
type ownerMode struct {
	o    *owner
	mode Mode
}

// lose ends the round's Leases on the hold, which Redis no longer has, and
// marks its owner: it shares and passes the hold no more (see
// loseMadeOn, loseIfGone).
func (h *renewHold) lose(err error, cause lossCause) {
	h.leases[0].own.lost(h.mode).Store(true)
	for _, l := range h.leases {
		l.lose(err, cause)
	}
}

// loseMadeOn ends the Leases that a share or a cohort pass put on a hold
// of lost while the round that found it gone was on its way: made with no
// Redis call, they stand on that hold. One pass over the Client's leases
// for the whole round (a restart loses every hold at once). A Lease made
// as its owner was marked finds the mark when it checks again
// (loseIfGone). A further hold made meanwhile is left alone: Redis granted
// it, maybe after the hold was found gone (a downgraded owner's read,
// released and taken again).
func (r *renewer) loseMadeOn(lost map[ownerMode]error) {
	if len(lost) == 0 {
		return
	}
	type loss struct {
		l   *Lease
		err error
	}
	var ends []loss
	r.mu.Lock()
	for l := range r.leases {
		if l.woken != wait.Share && l.woken != wait.Cohort {
			continue
		}
		if err, ok := lost[ownerMode{l.own, l.mode}]; ok {
			ends = append(ends, loss{l, err})
		}
	}
	r.mu.Unlock()
	for _, e := range ends {
		e.l.lose(e.err, lossGone)
	}
}

// close stops the watchdog and ends every lease still held: nothing will
// renew them any more, so their holders must not rely on them.
func (r *renewer) close(cause lossCause) {
	r.stop()
	<-r.done
	r.calls.Wait()
	r.endAll(cause)
}

// endAll ends every lease still held, as closing does; cause is Close's
// or Shutdown's.
func (r *renewer) endAll(cause lossCause) {
	for _, l := range r.all() {
		l.end(tag(fmt.Sprintf("fairrw: lease lost: %q: the client closed", l.lockName()), errClosedLease), cause)
	}
}

// all returns every lease the Client holds now.
func (r *renewer) all() []*Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	leases := make([]*Lease, 0, len(r.leases))
	for l := range r.leases {
		leases = append(leases, l)
	}
	return leases
}
