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
// connection) until the group's last waiter leaves. The subscription goes
// on a connection of the registry's own, and ends without an UNSUBSCRIBE
// (see connections.go).
func (r *Registry) subscribe(ctx context.Context, g *Group) {
	defer r.wg.Done()
	if !r.cfg.connected(ctx) {
		return // the group ended, or the Client did, before it connected
	}
	rdb := r.cfg.Redis()
	sharded := r.cfg.Publish() == compat.SPublish
	channel := g.keys.Channel
	// rueidis recycles a command once it ran: build a fresh one every time.
	// Pinned, subscribe commands are never recycled: rueidis can match a
	// push to a command its writer is still encoding (a connection reset in
	// the middle), and recycling it then races with that write.
	subscribe := func() rueidis.Completed {
		if sharded {
			return rdb.B().Ssubscribe().Channel(channel).Build().Pin()
		}
		return rdb.B().Subscribe().Channel(channel).Build().Pin()
	}
	// A sharded subscription's connection is bound to the node that owned
	// the channel's slot: Redis ends it when the slot moves, and the
	// subscription is made again on a new connection. Elsewhere the
	// connections are shared by every channel.
	cmd := subscribe()
	slot := cmd.Slot()
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) { r.onSubscription(g, s) })
	backoff := NewBackoff(MinRetryBackoff, MaxRetryBackoff)
	for {
		c := r.attach(ctx, rdb, g, slot)
		if c == nil {
			return
		}
		err := c.client.Receive(hooked, cmd, func(m rueidis.PubSubMessage) { r.onMessage(g, m.Message) })
		cmd = subscribe() // a fresh one for the next turn (rueidis recycles a command once it ran)
		if ctx.Err() != nil {
			r.detach(g, c, false)
			return
		}
		// Messages are lost until it is made again, and maybe after.
		r.lostSubscription(g, err != nil)
		// Redis refusing the subscription (an ACL, a MOVED) leaves the
		// connection as it was; anything else (a lost connection, a
		// closed one) does not.
		_, refused := err.(*rueidis.RedisError)
		r.detach(g, c, (err != nil && !refused) || (err == nil && sharded))
		if err == nil { // the server ended the subscription: make it again at once
			backoff.Reset()
			continue
		}
		if backoff.Wait(ctx, nil) != nil {
			return
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
