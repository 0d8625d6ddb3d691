package wait

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The connections that subscriptions go on, and why a subscription never
// ends with an UNSUBSCRIBE.
//
// rueidis v1.0.79 writes a PING after every UNSUBSCRIBE, to tell the
// unsubscribe's answer from the pushes around it. While a script keeps
// Redis BUSY, both are refused: rueidis takes the first refusal for the
// unsubscribe's answer, and the second then answers nothing it sent, so its
// reading goroutine panics ("message handled out of order"), or, with more
// commands in flight on the connection, hands each the answer of the one
// before. No check before the UNSUBSCRIBE closes the window: a script can
// start between the check's answer and the UNSUBSCRIBE.
//
// So subscriptions go on connections of their own (rueidis's dedicated
// connections), never on the connection that carries the lock's scripts,
// and a subscription ends with its connection. A connection carries the
// subscriptions of many groups; when a group ends, rueidis drops its
// channel's messages, and Redis keeps sending them until the connection
// closes. A connection closes:
//   - once no group is on it and none has come for connLinger, so that a
//     lock contended again and again keeps one connection rather than dial
//     one per contention;
//   - when its last group ends, once it carries maxStale ended
//     subscriptions (it takes no new group from then on), so that what Redis
//     sends for nobody stays bounded;
//   - when it failed (its groups move to a new one); under Sentinel, when
//     the master it went to is no longer the one rueidis sends to (a
//     failover: the old master may never get the lock's messages again);
//     and when the registry closes.
//
// A subscription connection does not track keys (but on a cluster): the
// Client's one tracking connection per node is the one its reads arm (see
// fairrw's New), and this one reads none.
//
// Closing a connection that client tracking is on for makes rueidis call
// the Client's invalidation hook with nil (any key may have changed): the
// rules above make that rare, and a spurious wake-up costs one attempt.

// connLinger is how long a connection with no group stays open for the
// next one.
const connLinger = time.Second

// maxStale is how many ended subscriptions a connection carries before it
// takes no new group.
const maxStale = 64

// trackingOffTimeout bounds the CLIENT TRACKING OFF that a new connection
// sends, on a Redis that does not answer.
const trackingOffTimeout = 2 * time.Second

// routeCheck is how often a connection under Sentinel checks that rueidis
// still sends to the master it went to.
const routeCheck = 200 * time.Millisecond

// subConn is one dedicated connection and the groups whose subscriptions
// it carries. Its fields but client and ready are guarded by the registry's
// mu.
type subConn struct {
	slot   uint16
	client rueidis.DedicatedClient // set before ready closes
	ready  chan struct{}
	live   int                 // groups on it now
	stale  map[string]struct{} // channels of ended groups, still subscribed
	// retired: it takes no new group (it failed, or carries maxStale ended
	// subscriptions); it closes when its last group leaves.
	retired bool
	// joined closes when a group comes to it while it has none: a
	// lingering group's goroutine (linger) then leaves it open.
	joined chan struct{}
	gone   chan struct{} // closes when it is closed: its route watch ends
}

// attach returns the connection that g's subscription goes on, opening
// one when none with slot takes new groups. It waits for the connection
// to be dialed, or for ctx; nil once ctx ended.
func (r *Registry) attach(ctx context.Context, rdb rueidis.Client, g *Group, slot uint16) *subConn {
	if ctx.Err() != nil {
		return nil // a group that ended dials nothing
	}
	r.mu.Lock()
	c := r.conns[slot]
	opener := c == nil
	if opener {
		c = &subConn{slot: slot, ready: make(chan struct{}), stale: make(map[string]struct{}), gone: make(chan struct{})}
		r.conns[slot] = c
		r.allConns[c] = struct{}{}
	}
	c.live++
	if c.joined != nil {
		close(c.joined)
		c.joined = nil
	}
	delete(c.stale, g.keys.Channel)
	r.mu.Unlock()
	if opener {
		r.open(rdb, c)
	}
	select {
	case <-c.ready:
		return c
	case <-ctx.Done():
		r.detach(g, c, false)
		return nil
	}
}

// open makes c's connection and closes c.ready.
func (r *Registry) open(rdb rueidis.Client, c *subConn) {
	sentinel := rdb.Mode() == rueidis.ClientModeSentinel
	var at string
	if sentinel {
		at = route(rdb) // before Dedicate: a failover between them is then seen
	}
	// rueidis dials a single node's dedicated connection here, up to its
	// dial timeout; a failed dial gives a connection whose every command
	// fails, which retires it.
	c.client, _ = rdb.Dedicate()
	close(c.ready)
	// On a cluster a dedicated connection goes to the node of its first
	// command's slot, and takes no command of another slot after it: the
	// subscription must come first, and the connection keeps tracking. Its
	// answer does not matter either way: a connection that tracks but
	// reads nothing gets no invalidation.
	if r.cfg.Tracking != nil && r.cfg.Tracking() && rdb.Mode() != rueidis.ClientModeCluster {
		// Not within the opening group's ctx: that group may end at once,
		// and the connection serve others for long.
		base := r.cfg.Halt
		if base == nil {
			base = context.Background()
		}
		octx, cancel := context.WithTimeout(base, trackingOffTimeout)
		_ = c.client.Do(octx, c.client.B().ClientTracking().Off().Build()).Error()
		cancel()
	}
	if sentinel {
		r.watchers.Add(1)
		go r.watchRoute(rdb, c, at)
	}
}

// route names the nodes rdb sends commands to now.
func route(rdb rueidis.Client) string {
	return strings.Join(slices.Sorted(maps.Keys(rdb.Nodes())), ",")
}

// watchRoute closes c once rdb sends to other nodes than at, the route c
// was made on, so that its groups subscribe again where rdb sends now.
func (r *Registry) watchRoute(rdb rueidis.Client, c *subConn, at string) {
	defer r.watchers.Done()
	t := time.NewTicker(routeCheck)
	defer t.Stop()
	for {
		select {
		case <-c.gone:
			return
		case <-t.C:
		}
		if route(rdb) != at {
			r.mu.Lock()
			r.retireLocked(c)
			r.mu.Unlock()
			// Its groups' Receive fail: they subscribe again on a new
			// connection, and the last one out closes this one for good.
			c.client.Close()
			return
		}
	}
}

// detach takes g's subscription off c. A failed connection takes no new
// group. It closes c when the rules above say so, and otherwise, for the
// last group on a connection that still takes groups, lingers (see linger).
func (r *Registry) detach(g *Group, c *subConn, failed bool) {
	r.mu.Lock()
	c.live--
	c.stale[g.keys.Channel] = struct{}{}
	if failed || len(c.stale) >= maxStale {
		r.retireLocked(c)
	}
	closeNow := c.live == 0 && (c.retired || r.closed)
	var joined chan struct{}
	if c.live == 0 && !closeNow {
		c.joined = make(chan struct{})
		joined = c.joined
	}
	r.mu.Unlock()
	switch {
	case closeNow:
		r.closeConn(c)
	case joined != nil:
		r.linger(c, joined)
	}
}

// retireLocked makes c take no new group.
func (r *Registry) retireLocked(c *subConn) {
	c.retired = true
	if r.conns[c.slot] == c {
		delete(r.conns, c.slot)
	}
}

// linger keeps c, which no group is on, open for connLinger, and then
// closes it unless a group came meanwhile. The registry's close cuts it
// short (and closes c itself).
func (r *Registry) linger(c *subConn, joined chan struct{}) {
	t := time.NewTimer(connLinger)
	defer t.Stop()
	select {
	case <-joined:
		return
	case <-r.done:
		return
	case <-t.C:
	}
	r.mu.Lock()
	idle := c.live == 0 && c.joined == joined
	if idle {
		r.retireLocked(c)
	}
	r.mu.Unlock()
	if idle {
		r.closeConn(c)
	}
}

// closeConn closes c once (its subscriptions end with it). rueidis waits
// up to a second for a PING's answer first, on a Redis that does not
// answer.
func (r *Registry) closeConn(c *subConn) {
	r.mu.Lock()
	select {
	case <-c.gone:
		r.mu.Unlock()
		return
	default:
	}
	close(c.gone)
	r.retireLocked(c)
	delete(r.allConns, c)
	r.mu.Unlock()
	<-c.ready
	if c.client != nil {
		c.client.Close()
	}
}

// closeConns closes every connection left, at once: the registry is
// closing, and every group has ended.
func (r *Registry) closeConns() {
	r.mu.Lock()
	left := make([]*subConn, 0, len(r.allConns))
	for c := range r.allConns {
		left = append(left, c)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range left {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.closeConn(c)
		}()
	}
	wg.Wait()
	r.watchers.Wait()
}
