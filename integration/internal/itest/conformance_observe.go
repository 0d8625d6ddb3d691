package itest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// contextAtGrant asks half of the leases for their Context right after the
// grant, and a quarter only once they ended (the context is then made
// cancelled already); the last quarter never asks (and pays nothing). A
// context asked for at the grant is done only if Done is closed.
func (e *confEnv) contextAtGrant(h *confHold) {
	switch h.id % 4 {
	case 0:
		return
	case 1:
		h.ctxLazy = true
		return
	}
	ctx := h.lease.Context()
	// The context first: done while Done is still open means it ended
	// before the lease did.
	cerr := ctx.Err()
	done := ConfDone(h.lease.Done())
	e.o.count("context checks", 1)
	if cerr != nil && !done {
		e.o.violate("context/early", h.Name, "%s: Context done (%v) right after the grant, while the lease is not Done (Err %v)", h, context.Cause(ctx), h.lease.Err())
	}
	if again := h.lease.Context(); again != ctx {
		e.o.violate("context/not-same", h.Name, "%s: two calls of Context returned different contexts", h)
	}
	h.ctx = ctx
}

// contextWhileHeld checks, while the worker holds h, that its context is
// done only once the lease is.
func (e *confEnv) contextWhileHeld(h *confHold, when string) {
	if h.ctx == nil {
		return
	}
	cerr := h.ctx.Err()
	done := ConfDone(h.lease.Done())
	e.o.count("context checks", 1)
	if cerr != nil && !done {
		e.o.violate("context/early", h.Name, "%s: Context done (%v) %s while the lease is not Done (deadline %s)", h, context.Cause(h.ctx), when, e.o.At(h.lease.Deadline()))
	}
}

// contextAfterUnlock: an Unlock that returned nil ended the lease (unless
// it had ended before: a lease whose local deadline ran out may still be
// released in Redis), so its context is done, with ErrUnlocked as the
// cause, or the loss that ended it first.
func (e *confEnv) contextAfterUnlock(h *confHold, err error) {
	if h.ctx == nil || err != nil {
		return
	}
	e.o.count("context checks", 1)
	want := h.lease.Err()
	if want == nil {
		want = hidden.ErrUnlocked
	}
	if h.ctx.Err() == nil {
		e.o.violate("context/alive-after-unlock", h.Name, "%s: Unlock returned nil but the lease's Context is not done", h)
	} else if cause := context.Cause(h.ctx); cause != want {
		e.o.violate("context/cause", h.Name, "%s: Unlock returned nil but the Context's cause is %v, want %v", h, cause, want)
	}
}

// contextAtEnd runs once Done is closed: the context (asked for now, for
// the lazy quarter) is done already, cancelled, with the lease's Err (or
// ErrUnlocked) as its cause.
func (e *confEnv) contextAtEnd(h *confHold) {
	ctx := h.ctx
	if h.ctxLazy {
		ctx = h.lease.Context()
	}
	if ctx == nil {
		return
	}
	e.o.count("context checks at end", 1)
	if ctx.Err() == nil {
		// Done is closed: so must the context be, by now.
		start := time.Now()
		select {
		case <-ctx.Done():
			e.o.violate("context/lag", h.Name, "%s: Done closed but its Context (asked for %s) was not done when read right after; it was %v later",
				h, map[bool]string{true: "after the end", false: "at the grant"}[h.ctxLazy], time.Since(start))
		case <-time.After(time.Second):
			e.o.violate("context/not-ended", h.Name, "%s: Done closed but its Context is still not done a second later", h)
			return
		}
	}
	want := h.lease.Err()
	if want == nil {
		want = hidden.ErrUnlocked
	}
	if cause := context.Cause(ctx); cause != want {
		e.o.violate("context/cause", h.Name, "%s: Context cause %v, want the lease's Err (or ErrUnlocked) %v", h, cause, want)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		e.o.violate("context/err", h.Name, "%s: Context Err %v, want context.Canceled", h, ctx.Err())
	}
}

// confInspectWrite is a write holder Inspect reported, checked at the end
// against the grants (one may be returned after the Inspect).
type confInspectWrite struct {
	Name, Owner string
	token       uint64
	t0, t1      time.Time
	// at is LockInfo.Time: the server's clock (whole ms) when Inspect's
	// script read the lock, the clock its tokens are minted from.
	at time.Time
}

// inspect reads name with Inspect on a random slot's Client (a random node
// Client of a quorum) and hands the answer to the oracle.
func (e *confEnv) inspect(rng *rand.Rand, name string) {
	gen := e.gen(rng.IntN(len(e.slots)))
	c := gen.nodes[rng.IntN(len(gen.nodes))]
	cc := e.shortOr(rng, e.runCtx, 30, time.Millisecond, 60*time.Millisecond, 3*time.Second)
	defer cc.cancel()
	before := e.o.deadlinesOf(name)
	t0 := time.Now()
	info, err := c.Inspect(cc.ctx, name)
	t1 := time.Now()
	e.o.callReturned("Inspect", cc, t0, t1, err, fmt.Sprintf("%s Inspect(%s%s)", gen.label, name, cc.desc))
	fair := e.tg.Kind == ConfRWKind && e.tg.Policy.String() != "redisson"
	e.o.inspected(name, gen.Quorum != nil, e.inspectPolicies(), t0, t1, info, err, before, fair)
}

// deadlinesOf reads the Deadline of every live lease of name: read before
// an Inspect, each is at most what Redis keeps (less LeaseMargin) when the
// Inspect reads it (a renewal confirmed later may have moved it since).
func (o *confOracle) deadlinesOf(name string) map[*confHold]time.Time {
	o.Mu.Lock()
	live := append([]*confHold(nil), o.live[name]...)
	o.Mu.Unlock()
	out := make(map[*confHold]time.Time, len(live))
	for _, h := range live {
		out[h] = h.lease.Deadline()
	}
	return out
}

// inspectPolicies are the policies Inspect may report for a name of the
// target.
func (e *confEnv) inspectPolicies() []string {
	switch {
	case e.tg.Kind == ConfMutexKind:
		return []string{"", hidden.PolicyMutex}
	case e.tg.Policy.String() == "redisson":
		return []string{"", "redisson"}
	default:
		return []string{"", e.tg.Policy.String(), hidden.PolicyFair}
	}
}

// inspected checks what Inspect read within [t0, t1]: at most one writer,
// never with another owner's reader; the target's policy; a token no older
// than the writes granted before; and every lease believed held throughout
// (no Unlock begun, its Client not stopping) among the holders.
//
// Of each lease believed held throughout, Redis must keep the hold at
// least LeaseMargin past its Deadline as read before the Inspect (before),
// and, for a single WithLease hold of a fair policy (fair), no longer than
// its lease and the margin after its call returned (checkKeptLocked).
func (o *confOracle) inspected(name string, node bool, policies []string, t0, t1 time.Time, info *fairrw.LockInfo, err error, before map[*confHold]time.Time, fair bool) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	o.Stats["inspects -> "+confErrKind(err)]++
	if err != nil {
		return
	}
	now := time.Now()
	var writers []fairrw.HolderInfo
	var holders []string
	for _, h := range info.Holders {
		holders = append(holders, fmt.Sprintf("%s %s x%d %v", h.Mode, shortWire(h.Owner), h.Holds, h.Remaining))
		if h.Mode == fairrw.Write {
			writers = append(writers, h)
		}
	}
	desc := fmt.Sprintf("Inspect [%s, %s]: policy %q token %d holders [%s]", o.At(t0), o.At(t1), info.Policy, info.Token, strings.Join(holders, ", "))
	o.eventLocked(name, t1, "%s", desc)
	if info.Name != name {
		o.violateLocked("inspect/name", name, now, "%s: Name %q", desc, info.Name)
	}
	allowed := false
	for _, p := range policies {
		allowed = allowed || info.Policy == p
	}
	if !allowed {
		o.violateLocked("inspect/policy", name, now, "%s: policy not one of %q", desc, policies)
	}
	if len(writers) > 1 {
		o.violateLocked("inspect/two-writers", name, now, "%s: two write holders", desc)
	}
	if len(writers) == 1 {
		for _, h := range info.Holders {
			if h.Mode == fairrw.Read && h.Owner != writers[0].Owner {
				o.violateLocked("inspect/writer-and-reader", name, now, "%s: a writer and another owner's reader %s", desc, shortWire(h.Owner))
			}
		}
	}
	if node {
		return // a quorum's node: its leases hold on a majority, not on every node
	}
	if len(writers) == 1 {
		o.inspects = append(o.inspects, confInspectWrite{Name: name, Owner: writers[0].Owner, token: info.Token, t0: t0, t1: t1, at: info.Time})
	}
	if info.Token != 0 {
		for _, w := range o.Writes[name] {
			if w.returned.Before(t0) && info.Token < w.hold.token && !w.hold.passedAbove(info.Token) {
				o.violateLocked("inspect/token-stale", name, now, "%s: token lower than the token %d of write %s, granted (returned %s) before the Inspect",
					desc, w.hold.token, w.hold, o.At(w.returned))
				break
			}
		}
	}
	for _, h := range o.live[name] {
		if !h.granted.Before(t0) || !(h.unlockBegan.IsZero() || h.unlockBegan.After(t1)) || (h.gen != nil && !h.gen.stopBegan.IsZero() && !h.gen.stopBegan.After(t1)) ||
			ConfDone(h.lease.Done()) || !h.lease.Deadline().After(t1.Add(20*time.Millisecond)) {
			continue
		}
		found := false
		for _, x := range info.Holders {
			if x.Owner == h.wire && x.Mode == h.mode {
				found = true
				if d, ok := before[h]; ok {
					o.checkKeptLocked(h, x, info, d, fair, desc, now)
				}
			}
		}
		if !found {
			o.violateLocked("inspect/missing-holder", name, now, "%s: %s (token %d, granted %s, deadline %s), believed held throughout, is not among the holders",
				desc, h, h.token, o.At(h.granted), o.At(h.lease.Deadline()))
		}
	}
}

// tokenTime is the server time a fencing token was minted at (tokens are
// the server's clock in microseconds, or a few above).
func tokenTime(token uint64) time.Time { return time.UnixMicro(int64(token)) }

// checkInspectWrites checks, once every grant is known, each write holder
// Inspect reported: its token is its grant's (under WriterPreferring and
// PhaseFair the write's token lives as long as the write; the Redisson
// formats keep only the last token minted, for a second, which a downgrade
// read may have moved on), and a writer whose grant was never returned (a
// grant given back) does not carry another write's token.
func (o *confOracle) checkInspectWrites(fair bool) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	for _, x := range o.inspects {
		var own *confHold
		var other *confHold
		for _, w := range o.Writes[x.Name] {
			switch {
			case w.hold.wire == x.Owner && own != nil && own.token == x.token:
				// The Redis grant's own Lease: later ones of the owner
				// were passed within its cohort.
			case w.hold.wire == x.Owner && (w.hold.token == x.token || w.hold.passedAbove(x.token)):
				own = w.hold
			case w.hold.wire == x.Owner && own == nil:
				own = w.hold
			case x.token != 0 && w.hold.token == x.token:
				other = w.hold
			}
		}
		desc := fmt.Sprintf("Inspect [%s, %s] (read at server time %s) reported writer %s with token %d", o.At(x.t0), o.At(x.t1), o.At(x.at), shortWire(x.Owner), x.token)
		switch {
		case own == nil && other != nil:
			o.violateLocked("inspect/token-foreign", x.Name, now, "%s, which no grant returned, with the token of write %s", desc, other)
		case own == nil:
			o.Stats["inspect writers never granted (given back)"]++
		case x.token != 0 && x.token < own.token && !x.at.After(tokenTime(own.token)):
			// Inspect's script read the lock no later than the
			// millisecond its owner's returned grant was minted in (its
			// LockInfo.Time and the token are both the server's clock;
			// a token is never below the clock it was minted at): it
			// may have read before that mint, and seen an earlier grant
			// of the same owner: one never returned, which ran out
			// before its Lock learned of it (an attempt whose reply came
			// after its lease, or was lost), after which the Lock waited
			// on and was granted again; or, for the Redisson formats,
			// the same hold's first token, which a retry of its attempt
			// replaced after the fence key (kept a second) expired
			// (lua/redisson_lock_acquire.lua). Such an earlier grant, as
			// one given back, excludes as any hold (inspect/two-writers
			// and the exclusion checks judge it). The test's own clock
			// cannot tell: the Inspect's reply may come long after its
			// read (t1), later than the grant it did not see. A lower
			// token read after the grant was minted is still a
			// violation.
			o.Stats["inspect writers seen in an earlier grant of their owner"]++
		case fair && x.token != own.token && !own.passedAbove(x.token):
			o.violateLocked("inspect/token", x.Name, now, "%s; its grant %s has token %d", desc, own, own.token)
		case !fair && x.token != 0 && x.token < own.token:
			o.violateLocked("inspect/token", x.Name, now, "%s, lower than its grant's %d (%s)", desc, own.token, own)
		default:
			o.Stats["inspect writers matched"]++
		}
	}
}
