package wait

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/fairrw/rwlock/internal/script"
	"github.com/fairrw/rwlock/internal/wire"
)

// A lock's subscription can miss messages while the deployment's topology
// changes, and nothing says so when it is made again:
//
//   - A failover or a slot migration makes Redis drop the sharded
//     subscriptions of the slot; the subscription loop makes it again at
//     once, through the cluster client's slot map, which may still name the
//     demoted primary. That node, now a replica of the slot's primary,
//     accepts the subscription, but is sent the shard's messages only once
//     the new primary counts it as its replica (a gossip round later, some
//     hundreds of milliseconds): a release meanwhile is lost, after the
//     waiters' "re-subscribed" retry was refused.
//   - A subscription whose connection broke misses everything until it is
//     made again, which may take as long as the cluster client needs to
//     find the slot's new primary.
//
// So a group whose subscription was lost is suspect until a probe proves
// that the lock's messages reach it again: a message the group publishes
// itself on the lock's channel, from a script (which runs on the slot's
// primary, as a release does), coming back on the subscription. Meanwhile
// its waiters sleep at most suspectMinNap, growing to suspectMaxNap as the
// suspicion lasts, rather than the PTTL; once the probe is back, every
// waiter retries once more (a release between the loss and the probe may
// have been lost) and sleeps as before. A subscription made for a new
// group within unsettledFor of a loss in this Client is suspect as well:
// it may have been routed by the same stale map.
//
// Nothing of this runs while the topology holds still: no probe is sent and
// no sleep is shortened.
//
// A probe is a negative decimal number, which no policy publishes (Redisson
// publishes 0 and 1, the fair policies "r" and "g:..."): Java Redisson,
// whose lock channels carry numbers, ignores it, as fairrw's waiters do.
const (
	suspectMinNap = 200 * time.Millisecond
	suspectMaxNap = time.Second
	unsettledFor  = 10 * time.Second
	// probeTimeout bounds one probe's round trip.
	probeTimeout = 2 * time.Second
	// probesKept is how many of a group's latest probes count when they
	// come back (a late one proves the way as well as the latest).
	probesKept = 8
)

// probeScript publishes ARGV[2] on channel KEYS[1] with the publish command
// ARGV[1]. Declaring the channel as its key routes the script to the slot's
// primary, where releases publish; a duplicate publish is harmless, so
// rueidis may retry it.
var probeScript = script.New("probe", true)

// isProbe reports whether msg is a probe, of this Client or another.
func isProbe(msg string) bool { return strings.HasPrefix(msg, "-") }

func newProbe() string { return "-" + strconv.FormatUint(rand.Uint64()>>1|1, 10) }

// suspectLocked makes g suspect, if it is not already. lost: the
// subscription was lost, so the probes sent before no longer prove anything.
func (r *Registry) suspectLocked(g *Group, lost bool) {
	if lost {
		g.probes = nil
	}
	if g.suspectSince.IsZero() {
		g.suspectSince = time.Now()
	}
}

// proveLocked is called when a suspect group's subscription is confirmed:
// its prober (started now, or woken) sends a probe at once.
func (r *Registry) proveLocked(g *Group) {
	if g.suspectSince.IsZero() || g.ctx == nil {
		return
	}
	if g.probing {
		select {
		case g.kick <- struct{}{}:
		default:
		}
		return
	}
	g.probing = true
	g.kick = make(chan struct{}, 1)
	r.wg.Add(1)
	go r.probe(g, g.kick)
}

// lostSubscription is called when g's subscription ended without its
// group ending: every later subscription of this Client is doubted for a
// while, and g until a probe comes back on the one made again. With wake,
// its waiters retry now and sleep the short naps from then on (the
// subscription may take long to come back: its connection broke).
func (r *Registry) lostSubscription(g *Group, wake bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unsettledUntil = time.Now().Add(unsettledFor)
	r.suspectLocked(g, true)
	if wake {
		r.wakeAllLocked(g, Resubscribe)
	}
}

// probeEchoLocked handles a probe on g's channel: one of g's own ends the
// suspicion, and every waiter retries once more. It reports whether msg was
// a probe (of anyone), which wakes nobody else.
func (r *Registry) probeEchoLocked(g *Group, msg string) bool {
	if !isProbe(msg) {
		return false
	}
	for _, p := range g.probes {
		if p == msg && !g.suspectSince.IsZero() {
			g.suspectSince, g.probes = time.Time{}, nil
			r.wakeAllLocked(g, Resubscribe)
			break
		}
	}
	return true
}

// probe publishes probes on g's channel until one comes back (see
// probeEchoLocked) or the group ends, every suspectMinNap at first, then
// less often, up to every suspectMaxNap; at once again when kicked (the
// subscription was made again).
func (r *Registry) probe(g *Group, kick <-chan struct{}) {
	defer r.wg.Done()
	nap := NewBackoff(suspectMinNap, suspectMaxNap)
	for {
		r.mu.Lock()
		if g.suspectSince.IsZero() || g.ctx.Err() != nil {
			g.probing = false
			r.mu.Unlock()
			return
		}
		p := newProbe()
		g.probes = append(g.probes, p)
		if len(g.probes) > probesKept {
			g.probes = g.probes[len(g.probes)-probesKept:]
		}
		r.mu.Unlock()
		// An error (the slot's primary is unreachable, say) is answered by
		// the next probe; the waiters meanwhile take short naps.
		ctx, cancel := context.WithTimeout(g.ctx, probeTimeout)
		stop := context.AfterFunc(r.cfg.Halt, cancel) // a Shutdown cut short
		req := wire.Probe{Channel: g.keys.Channel, Publish: r.cfg.Publish(), Probe: p}
		keys, args := req.Render()
		_ = probeScript.Exec(ctx, r.cfg.Redis(), keys, args).Error()
		stop()
		cancel()
		// A kick ends the nap as a closing channel would, with ErrClosed.
		switch err := nap.Wait(g.ctx, kick); {
		case err == nil: // the nap ran out: the next is twice as long
		case errors.Is(err, ErrClosed): // kicked
			nap.Reset()
		default: // the group ended
			r.mu.Lock()
			g.probing = false
			r.mu.Unlock()
			return
		}
	}
}

// firstSubscriptionLocked is called on a group's first subscription: in a
// Client that lost a subscription lately, it is doubted too.
func (r *Registry) firstSubscriptionLocked(g *Group) {
	if time.Now().Before(r.unsettledUntil) {
		r.suspectLocked(g, false)
		r.proveLocked(g)
	}
}

// NapBound returns the longest w may sleep, given bound: while its group
// is suspect, a short nap that grows with the suspicion's age, from
// suspectMinNap to suspectMaxNap.
func (w *Waiter) NapBound(bound time.Duration) time.Duration {
	r := w.group.registry
	r.mu.Lock()
	since := w.group.suspectSince
	r.mu.Unlock()
	if since.IsZero() {
		return bound
	}
	return min(bound, min(max(time.Since(since), suspectMinNap), suspectMaxNap))
}
