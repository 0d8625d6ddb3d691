package fairrw

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/lua"
)

// WriterPreferring returns the policy of seed 002's wait_write design, with
// its flaws fixed: a writer that waits turns new readers away, so a writer
// waits at most for the read holds present when it arrived. Waiting writers
// are queued first-come-first-served by a server-side sequence, each entry
// with a deadline that its waiter refreshes, so a writer that dies blocks
// readers no longer than its entry's lease. An owner that already holds the
// lock always gets another read (no reentrancy deadlock). Readers can starve
// under a steady stream of writers. It is the default policy.
func WriterPreferring() Policy { return fairPolicy{code: "wp", label: "writer-preferring"} }

// PhaseFair returns the policy under which read and write phases alternate:
// when a write ends, every reader waiting at that moment enters before the
// next writer; while readers hold the lock and a writer waits, new readers
// wait; writers are served first-come-first-served. No reader waits for more
// than one write phase, and no writer starves.
func PhaseFair() Policy { return fairPolicy{code: "pf", label: "phase-fair"} }

// fairPolicy is both fair policies: one state machine (lua/fair_lib.lua),
// told which rule to apply.
type fairPolicy struct {
	code  string // "wp" or "pf", as the scripts know them
	label string
}

// String returns "writer-preferring" or "phase-fair".
func (p fairPolicy) String() string { return p.label }

func (p fairPolicy) impl() policyImpl { return p }
func (p fairPolicy) name() string     { return p.label }
func (fairPolicy) queued() bool       { return true }

var (
	fairAcquire     = script.NewFrom("fair_acquire", lua.Compose("fair_lib", "fair_acquire"), true)
	fairUnlock      = script.NewFrom("fair_unlock", lua.Compose("fair_lib", "fair_unlock"), true)
	fairCancel      = script.NewFrom("fair_cancel", lua.Compose("fair_lib", "fair_cancel"), true)
	fairForceUnlock = script.NewFrom("fair_force_unlock", lua.Compose("fair_lib", "fair_force_unlock"), false)
	fairRenew       = script.New("fair_renew", true)
)

func (fairPolicy) keys(name string) (lockKeys, error) {
	fk := compat.Fair(name)
	if err := validateName(name, fk.State, fk.Readers, fk.Channel, compat.Fence(name), compat.AttemptLatch(name, "x"), compat.UnlockLatch(name, "x")); err != nil {
		return lockKeys{}, err
	}
	// No tracked key: waiters' own attempts write the state (queue entries),
	// so its invalidations would wake waiters for nothing, and the release
	// messages already name exactly who may enter.
	return lockKeys{name: name, slot: slotOf(name), channel: fk.Channel}, nil
}

// common returns the KEYS and ARGV every fair script starts with.
func (p fairPolicy) common(k *lockKeys, mode Mode, owner string, lease, queue, latchTTL string, publish string) ([]string, []string) {
	fk := compat.Fair(k.name)
	keys := []string{fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, compat.Fence(k.name), fk.Channel, k.name}
	m := "w"
	if mode == Read {
		m = "r"
	}
	return keys, []string{p.code, m, owner, lease, queue, latchTTL, publish}
}

func (p fairPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	keys, args := p.common(k, r.mode, r.owner, millis(r.lease), millis(r.queue), millis(r.latchTTL), r.publish)
	keys = append(keys, compat.AttemptLatch(k.name, r.attempt))
	args = append(args, boolArg(r.wait))
	return runAcquire(ctx, rdb, fairAcquire, keys, args, r)
}

func (p fairPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	keys, args := p.common(k, r.mode, r.owner, millis(r.lease), millis(r.queue), millis(r.latchTTL), r.publish)
	keys = append(keys, compat.AttemptLatch(k.name, r.attempt), compat.UnlockLatch(k.name, r.request))
	action := "del"
	if r.abort {
		action = "abort"
	}
	return parseRelease(fairUnlock.Exec(ctx, rdb, keys, append(args, action)))
}

func (p fairPolicy) cancelWait(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) error {
	keys, args := p.common(k, r.mode, r.owner, millis(r.lease), millis(r.queue), millis(r.latchTTL), r.publish)
	return fairCancel.Exec(ctx, rdb, keys, args).Error()
}

func (p fairPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	keys, args := p.common(k, mode, "", "1", "1", "1", publish)
	n, err := fairForceUnlock.Exec(ctx, rdb, keys, args).AsInt64()
	return n == 1, err
}

func (fairPolicy) renewEntry(k *lockKeys, owner string, mode Mode) ([]string, []string) {
	fk := compat.Fair(k.name)
	m := "w"
	if mode == Read {
		m = "r"
	}
	return []string{fk.State, fk.Readers}, []string{m, owner}
}

func (fairPolicy) renewScript() *script.Script { return fairRenew }

func (fairPolicy) unlockLatch(k *lockKeys, request string) string {
	return compat.UnlockLatch(k.name, request)
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
