package wait

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
)

// What Redis pushes to the waiters: the group's subscription loop and its
// confirmations, the messages on the lock's channel, and client tracking's
// invalidations.

// subscribe is the group's subscription loop. It re-subscribes whenever the
// server drops the subscription (failover, slot migration, a lost
// connection) until the group's last waiter leaves, then unsubscribes.
func (r *Registry) subscribe(ctx context.Context, g *Group) {
	defer r.wg.Done()
	if !r.cfg.connected(ctx) {
		return // the group ended, or the Client did, before it connected
	}
	rdb := r.cfg.Redis()
	sharded := r.cfg.Publish() == compat.SPublish
	channel := g.keys.Channel
	// rueidis recycles a command once it ran: build a fresh one every time.
	// Pinned, (un)subscribe commands are never recycled: rueidis can match
	// an unsubscribe push to an UNSUBSCRIBE its writer is still encoding
	// (a connection reset in the middle), and recycling it then races with
	// that write.
	subscribe := func() rueidis.Completed {
		if sharded {
			return rdb.B().Ssubscribe().Channel(channel).Build().Pin()
		}
		return rdb.B().Subscribe().Channel(channel).Build().Pin()
	}
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) { r.onSubscription(g, s) })
	backoff := NewBackoff(MinRetryBackoff, MaxRetryBackoff)
	for ctx.Err() == nil {
		err := rdb.Receive(hooked, subscribe(), func(m rueidis.PubSubMessage) { r.onMessage(g, m.Message) })
		if ctx.Err() != nil {
			break
		}
		// Messages are lost until it is made again, and maybe after.
		r.lostSubscription(g, err != nil)
		if err == nil { // the server ended the subscription: make it again at once
			backoff.Reset()
			continue
		}
		if backoff.Wait(ctx, nil) != nil {
			break
		}
	}
	// rueidis only drops the local listener when Receive returns; the server
	// would keep the subscription (and keep sending) until told otherwise.
	// A Shutdown cut short (halt) does not wait for a Redis that does not
	// answer, where rueidis can stop the command: the server drops the
	// subscription with the connection.
	uctx, cancel := context.WithTimeout(r.cfg.Halt, r.cfg.UnlockTimeout)
	defer cancel()
	if !r.notBusy(uctx, rdb) {
		// Still busy in a script: the server keeps the subscription until
		// the connection closes, and rueidis drops what it pushes.
		return
	}
	unsubscribe := rdb.B().Unsubscribe().Channel(channel).Build().Pin()
	if sharded {
		unsubscribe = rdb.B().Sunsubscribe().Channel(channel).Build().Pin()
	}
	_ = rdb.Do(uctx, unsubscribe).Error()
}

// notBusy waits, within ctx, until Redis is not busy in a script (BUSY),
// and reports whether it is not. rueidis v1.0.79 panics on its reading
// goroutine (a protocol bug, message handled out of order) when an
// UNSUBSCRIBE meets a BUSY server: a PING first tells, and the unsubscribe
// waits for the script to end. A server that does not answer the PING at
// all is not busy: the unsubscribe fails as the PING did.
//
// A window is left: a script that starts within a round trip after the
// PING's answer, and runs past busy-reply-threshold, still answers the
// UNSUBSCRIBE and rueidis's PING after it with BUSY, and rueidis panics
// (it takes the first BUSY for the unsubscribe's answer, and finds no
// command for the second). A conformance fault running such a script every
// second or so found it once in three 20 s runs; the fix is rueidis's
// (isUnsubReply).
func (r *Registry) notBusy(ctx context.Context, rdb rueidis.Client) bool {
	backoff := NewBackoff(MinRetryBackoff, MaxRetryBackoff)
	for {
		err := rdb.Do(ctx, rdb.B().Ping().Build().Pin()).Error()
		if !r.cfg.Busy(err) {
			return true
		}
		if backoff.Wait(ctx, nil) != nil {
			return false
		}
	}
}

// onSubscription runs on every subscribe confirmation. The first one lets
// the group's waiters retry; a later one means the subscription was lost and
// re-made, and messages may have been missed meanwhile, so everyone retries.
// Either may have been routed to a node that the lock's messages do not
// reach yet: the group is then suspect until a probe comes back (see
// topology.go).
func (r *Registry) onSubscription(g *Group, s rueidis.PubSubSubscription) {
	if s.Kind != "subscribe" && s.Kind != "ssubscribe" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !g.confirmed {
		g.confirmed = true
		close(g.ready)
		r.firstSubscriptionLocked(g)
		return
	}
	r.wakeAllLocked(g, Resubscribe)
	r.suspectLocked(g, false)
	r.proveLocked(g)
}

// onMessage handles a message on a lock's channel: the lock's policy says
// whom it lets in (Keys.Format). A probe (see topology.go) lets no
// one in.
func (r *Registry) onMessage(g *Group, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probeEchoLocked(g, msg) {
		return
	}
	r.applyLocked(g, g.keys.Format.decode(msg), PubSub)
}

// OnInvalidations is the rueidis client-tracking hook. It runs on the
// connection's reading goroutine, so it only signals. nil means the
// connection closed or the server flushed its tracking table: any key may
// have changed, so every waiter retries.
func (r *Registry) OnInvalidations(messages []rueidis.RedisMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if messages == nil {
		for _, g := range r.groups {
			r.wakeAllLocked(g, Invalidation)
		}
		return
	}
	for _, m := range messages {
		key, err := m.ToString()
		if err != nil {
			continue
		}
		if g := r.byTracked[key]; g != nil {
			// An invalidation says that the lock changed, not how: a
			// downgrade admits every reader (and publishes nothing), a
			// release one writer or every reader. Waking one waiter, a
			// writer that then fails, would leave the readers asleep.
			r.wakeReadersLocked(g, Invalidation)
			r.wakeOneLocked(g, Invalidation, Write)
		}
	}
}
