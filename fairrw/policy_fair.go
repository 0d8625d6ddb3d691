package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/lua"
)

// WriterPreferring returns the default policy: a waiting writer turns new
// readers away, so it waits at most for the reads held when it arrived and
// the writers queued before it. A steady stream of writers can starve readers.
func WriterPreferring() Policy { return fairPolicy{label: "writer-preferring"} }

// PhaseFair returns the policy under which read and write phases alternate:
// no reader waits for more than one write phase, and no writer starves.
// Writers are served first-come-first-served.
func PhaseFair() Policy { return fairPolicy{label: "phase-fair"} }

// fairPolicy is both fair policies: one state machine (lua/fair_lib.lua),
// told which rule to apply by the policy's public name, which it also
// records in the lock's state (an acquire under another policy is refused
// with that name).
type fairPolicy struct {
	label string
}

// String returns "writer-preferring" or "phase-fair".
func (p fairPolicy) String() string { return p.label }

func (p fairPolicy) impl() policyImpl { return p }
func (p fairPolicy) name() string     { return p.label }
func (fairPolicy) queued() bool       { return true }

var (
	fairAcquire     = script.NewFrom("fair_acquire", lua.Compose("common", "fair_lib", "fair_acquire"), false)
	fairUnlock      = script.NewFrom("fair_unlock", lua.Compose("common", "fair_lib", "fair_unlock"), false)
	fairForceUnlock = script.NewFrom("fair_force_unlock", lua.Compose("common", "fair_lib", "fair_force_unlock"), false)
	fairRenew       = script.New("fair_renew", true)
)

func (fairPolicy) keys(name string) (lockKeys, error) {
	fk := compat.Fair(name)
	if err := validateName(name, fk.State, fk.Readers, fk.Channel, compat.Fence(name), compat.OwnerMarker(name, "x"), compat.UnlockLatch(name, "x")); err != nil {
		return lockKeys{}, err
	}
	// No tracked key: waiters' own attempts write the state (queue entries),
	// so its invalidations would wake waiters for nothing, and the release
	// messages already name exactly who may enter.
	return lockKeys{name: name, slot: slotOf(name), channel: fk.Channel}, nil
}

// common returns the KEYS and ARGV every fair script starts with (see
// lua/fair_lib.lua).
func (p fairPolicy) common(k *lockKeys, mode Mode, owner string, lease, queue, stamp, window, publish string) ([]string, []string) {
	fk := compat.Fair(k.name)
	keys := []string{fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, compat.Fence(k.name), fk.Channel, k.name, compat.OwnerMarker(k.name, owner)}
	m := "w"
	if mode == Read {
		m = "r"
	}
	return keys, []string{p.label, m, owner, lease, queue, stamp, window, publish}
}

func (p fairPolicy) acquire(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *acquireRequest) (acquireReply, error) {
	keys, args := p.common(k, r.mode, r.owner, holdMillis(r.lease), holdMillis(r.queue), stampArg(r.stamp), millis(r.window), r.publish)
	return runAcquire(ctx, rdb, fairAcquire, keys, append(args, boolArg(r.wait), strconv.Itoa(r.further), boolArg(r.notify)), r)
}

func (p fairPolicy) release(ctx context.Context, rdb rueidis.Client, k *lockKeys, r *releaseRequest) (releaseResult, error) {
	keys, args := p.common(k, r.mode, r.owner, holdMillis(r.queue), holdMillis(r.queue), stampArg(r.stamp), millis(r.window), r.publish)
	keys = append(keys, compat.UnlockLatch(k.name, r.request))
	args = append(args, millis(r.latchTTL), boolArg(r.abandon), millis(r.markerTTL))
	args = append(args, r.state.writeArgs()...)
	args = append(args, strconv.Itoa(len(r.state.reads)), holdMillis(r.state.readCover()), boolArg(r.mayRead))
	values, err := fairUnlock.Exec(ctx, rdb, keys, args).ToArray()
	if err != nil {
		return releaseNotHeld, redisError(err)
	}
	if len(values) != 3 {
		return releaseNotHeld, fmt.Errorf("fairrw: unexpected unlock reply of %d values", len(values))
	}
	n, err1 := values[0].AsInt64()
	grantee, err2 := values[1].ToString()
	token, err3 := values[2].AsInt64()
	if err := errors.Join(err1, err2, err3); err != nil {
		return releaseNotHeld, fmt.Errorf("fairrw: unexpected unlock reply: %w", err)
	}
	if grantee != "" && r.granted != nil {
		r.granted(grantee, uint64(token))
	}
	switch {
	case n == -3:
		return releaseStale, nil
	case n < 0:
		return releaseNotHeld, nil
	case n == 0:
		return releaseStillHeld, nil
	default:
		return releaseFreed, nil
	}
}

// signal decodes the fair policies' messages (lua/fair_lib.lua): "r" lets
// every reader in, and a writer that keeps no place in the queue (a
// quorum's: a queued one would have been granted instead);
// "g:<token>:<owner>" tells owner it was granted the write.
func (fairPolicy) signal(msg string) wakeSignal {
	if msg == "r" {
		return wakeSignal{readers: true, writer: writerUnqueued}
	}
	rest, ok := strings.CutPrefix(msg, "g:")
	if !ok {
		return wakeSignal{}
	}
	t, owner, ok := strings.Cut(rest, ":")
	token, err := strconv.ParseUint(t, 10, 64)
	if !ok || err != nil {
		return wakeSignal{}
	}
	return wakeSignal{writer: writerNamed, owner: owner, granted: true, token: token}
}

func (p fairPolicy) forceUnlock(ctx context.Context, rdb rueidis.Client, k *lockKeys, mode Mode, publish string) (bool, error) {
	keys, args := p.common(k, mode, "", "1", "1", "0", "1", publish)
	n, err := fairForceUnlock.Exec(ctx, rdb, keys, args).AsInt64()
	return n == 1, redisError(err)
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
