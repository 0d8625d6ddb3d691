package fairrw

import (
	"cmp"
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// WriterPreferring returns the default policy: a waiting writer turns new
// readers away, so it waits at most for the reads held when it arrived and
// the writers queued before it. A steady stream of writers can starve readers.
func WriterPreferring() Policy { return newFairPolicy("writer-preferring", 0) }

// PhaseFair returns the policy under which read and write phases alternate:
// no reader waits for more than one write phase, and no writer starves.
// Writers are served first-come-first-served.
func PhaseFair() Policy { return newFairPolicy(phaseFairName, 0) }

// phaseFairName is PhaseFair's name, which the cohorts ask for: its
// readers end a cohort's run (cohort.go).
const phaseFairName = "phase-fair"

// fairPolicy is both fair policies: one state machine (lua/fair_lib.lua),
// told which rule to apply by the policy's public name, which it also
// records in the lock's state (an acquire under another policy is refused
// with that name).
type fairPolicy struct {
	label string
	// protocol is the protocol spoken (wire.Protocol when 0): only tests
	// speak another (hidden.WithProtocol).
	protocol int
	// record is what the lock's state records, wire.PolicyRecord of the
	// label and the protocol, rendered once rather than on every call.
	record string
}

// newFairPolicy returns the fair policy label speaking protocol (0:
// wire.Protocol).
func newFairPolicy(label string, protocol int) fairPolicy {
	p := fairPolicy{label: label, protocol: protocol}
	p.record = wire.PolicyRecord(label, cmp.Or(protocol, wire.Protocol))
	return p
}

// String returns "writer-preferring" or "phase-fair".
func (p fairPolicy) String() string { return p.label }

func (p fairPolicy) impl() policyImpl { return p }
func (p fairPolicy) name() string     { return p.label }
func (fairPolicy) queued() bool       { return true }

var (
	fairAcquire     = script.NewFrom("fair_acquire", lua.FairAcquire(), false)
	fairUnlock      = script.NewFrom("fair_unlock", lua.FairUnlock(), false)
	fairUnlockFast  = script.New("fair_unlock_fast", false)
	fairForceUnlock = script.NewFrom("fair_force_unlock", lua.FairForceUnlock(), false)
	fairRenew       = script.New("fair_renew", true)
)

func (fairPolicy) keys(name string) (lockKeys, error) {
	fk := wire.Fair(name)
	if err := validateName(name, fk.State, fk.Readers, fk.Channel, fk.Fence, wire.OwnerMarker(name, "x"), compat.UnlockLatch(name, "x")); err != nil {
		return lockKeys{}, err
	}
	// No tracked key: waiters' own attempts write the state (queue entries),
	// so its invalidations would wake waiters for nothing, and the release
	// messages already name exactly who may enter.
	return lockKeys{name: name, slot: slotOf(name), Keys: wait.Keys{Channel: fk.Channel, Format: wait.FairFormat}, fair: fk}, nil
}

// call is what every fair script takes first (see lua/fair_lib.lua).
func (p fairPolicy) call(k *lockKeys, mode Mode, owner string, stamp time.Time, window time.Duration, publish string) wire.FairCall {
	return wire.FairCall{Name: k.name, Keys: k.fair, Policy: p.label, Protocol: p.protocol, Record: p.record, Mode: wire.Mode(mode), Owner: owner, Stamp: stamp, Window: window, Publish: publish}
}

func (p fairPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	req := &r.fair
	*req = wire.FairAcquire{FairCall: p.call(k, r.mode, r.owner, r.stamp, r.window, r.publish), Wait: r.wait, Further: r.further, Notify: r.notify, Reserve: r.reserve}
	req.Lease, req.Queue = r.lease, r.queue
	keys, args := req.Render()
	return runAcquire(ctx, rdb, fairAcquire, keys, args, r)
}

func (p fairPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	if r.fast && r.successor == "" && r.state.writes == 0 && len(r.state.reads) == 0 && (r.mode == Read || !r.mayRead) {
		if res, applied, err := p.releaseFast(ctx, rdb, k, r); err != nil || applied {
			return res, err
		}
	}
	req := wire.FairUnlock{FairCall: p.call(k, r.mode, r.owner, r.stamp, r.window, r.publish),
		Request: r.request, Latch: r.latch, LatchTTL: r.latchTTL, Abandon: r.abandon, MarkerTTL: r.markerTTL, Kept: r.state.kept(), MayRead: r.mayRead, Passed: r.passed, Successor: r.successor}
	// A release takes no hold: the lease it sends is the span by which a
	// kept write moves the state's expiry, the queue lease.
	req.Lease, req.Queue = r.queue, r.queue
	keys, args := req.Render()
	u, err := wire.DecodeFairUnlock(fairUnlock.Exec(ctx, rdb, keys, args))
	if err != nil {
		return releaseNotHeld, redisError(err)
	}
	if u.Grantee != "" && r.grants != nil {
		r.grants.Deliver(&k.Keys, u.Grantee, u.Token)
	}
	return u.Result, nil
}

// releaseFast sends an owner's last release of a hold the fast path
// granted to lua/fair_unlock_fast.lua, which takes 3 keys and 3 values
// where fair_unlock takes 11 and 18: what Redis spends on a script grows
// with them. applied is false when it changed nothing (the hold is not the
// fast path's alone any more: a waiter came, a renewal moved its expiry, a
// further hold was taken, or it is gone): the caller sends fair_unlock then,
// under the same request id, and its latch.
func (fairPolicy) releaseFast(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (res releaseResult, applied bool, err error) {
	req := &r.fastWire
	*req = wire.FairUnlockFast{Name: k.name, Keys: k.fair, Mode: wire.Mode(r.mode), Owner: r.owner, Request: r.request, Latch: r.latch, LatchTTL: r.latchTTL}
	keys, args := req.Render()
	res, applied, err = wire.DecodeFairUnlockFast(fairUnlockFast.Exec(ctx, rdb, keys, args))
	if err != nil {
		return releaseNotHeld, false, redisError(err)
	}
	return res, applied, nil
}

func (p fairPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	req := wire.FairForceUnlock{FairCall: wire.FairCall{Name: k.name, Keys: k.fair, Policy: p.label, Protocol: p.protocol, Record: p.record, Mode: wire.Mode(mode), Publish: publish}}
	keys, args := req.Render()
	freed, err := wire.DecodeForceUnlock(fairForceUnlock.Exec(ctx, rdb, keys, args))
	return freed, redisError(err)
}

func (fairPolicy) renew(lease time.Duration, holds []renewKey) ([]string, []string) {
	req := wire.FairRenew{Lease: lease, Holds: make([]wire.FairRenewHold, len(holds))}
	for i, h := range holds {
		req.Holds[i] = wire.FairRenewHold{Keys: h.keys.fair, Mode: wire.Mode(h.mode), Owner: h.owner}
	}
	return req.Render()
}

func (fairPolicy) renewScript() *script.Script { return fairRenew }

func (fairPolicy) unlockLatch(k *lockKeys, request string) string {
	return k.fair.UnlockLatch(k.name, request)
}
