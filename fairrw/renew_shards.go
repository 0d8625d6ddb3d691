package fairrw

import (
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// shardView is a renewer's last view of which primary serves each slot of
// a cluster (CLUSTER SLOTS), so that a round sends one DoMulti per shard
// rather than one per slot: a round starts a goroutine per part, and a
// Client holding locks on thousands of slots would start thousands. The
// view only groups: with a true view, a shard's DoMulti never waits for
// another shard's answers. A slot the view does not know (no view yet,
// CLUSTER SLOTS refused by an ACL or not parsed, a slot unserved when it
// was taken) goes in a part of its own. A stale view (slots moved since)
// can put two shards' slots in one part, which then waits for the slower:
// so a round with a failed or unanswered call forgets the view (the next
// rounds go per slot) and takes another. A view is also taken again every
// shardViewAge, and a failed take is tried again after as long, or after
// a failed round.
type shardView struct {
	mu      sync.Mutex
	of      []int32   // slot -> shard + 1 (0: unknown); nil: no view
	tried   time.Time // when a view was last taken, or tried
	pending bool      // a view is being taken
}

// shardViewAge is how old a view may grow before a round takes another.
const shardViewAge = 30 * time.Second

// shardsOf returns the view's shards of slots, in order, -1 for a slot it
// does not know: one lock for the round.
func (v *shardView) shardsOf(slots []uint16) []int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]int32, len(slots))
	for i, s := range slots {
		out[i] = -1
		if v.of != nil && v.of[s] != 0 {
			out[i] = v.of[s] - 1
		}
	}
	return out
}

// forget drops the view: a round failed, maybe on slots that moved.
func (v *shardView) forget() {
	v.mu.Lock()
	v.of = nil
	v.mu.Unlock()
}

// refreshShards takes a new view in the background, unless one is being
// taken or the last take (or try) is younger than shardViewAge (stale:
// take it anyway, after a failed round). Its call is bounded by the renew
// interval as a round's are, and ends with the renewer's context; the
// renewer's close waits for it (calls).
func (r *renewer) refreshShards(stale bool) {
	v := &r.shards
	v.mu.Lock()
	if v.pending || !stale && !v.tried.IsZero() && time.Since(v.tried) < shardViewAge {
		v.mu.Unlock()
		return
	}
	v.pending = true
	v.mu.Unlock()
	r.calls.Add(1)
	go func() {
		defer r.calls.Done()
		ctx, cancel := withTimer(r.ctx, r.c.settings().renewInterval)
		defer cancel()
		rdb := r.c.redis()
		msgs, err := rdb.Do(ctx, rdb.B().ClusterSlots().Build().Pin()).ToArray()
		var of []int32
		if err == nil {
			of = shardTable(msgs)
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		v.pending, v.tried = false, time.Now()
		if of != nil {
			v.of = of
		}
	}()
}

// shardTable maps each slot of a CLUSTER SLOTS answer to its primary's
// index + 1 (0: no primary serves it), or nil if the answer does not
// parse or serves no slot.
func shardTable(msgs []rueidis.RedisMessage) []int32 {
	ranges, ok := slotRanges(msgs)
	if !ok || len(ranges) == 0 {
		return nil
	}
	of := make([]int32, 1<<14)
	index := make(map[string]int32)
	for _, rg := range ranges {
		i, ok := index[rg.node]
		if !ok {
			i = int32(len(index)) + 1
			index[rg.node] = i
		}
		for s := max(rg.from, 0); s <= min(rg.to, 1<<14-1); s++ {
			of[s] = i
		}
	}
	return of
}
