package fairrw

import (
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// shardView is a renewer's last view of which primary serves each slot of
// a cluster (CLUSTER SLOTS), so that a round sends one DoMulti per shard
// rather than one per slot: a round starts a goroutine per part, and a
// Client holding locks on thousands of slots would start thousands. The
// view only groups: a shard's DoMulti never waits for another shard's
// answers. A slot the view does not know (no view yet, CLUSTER SLOTS
// refused by an ACL, a slot unserved when it was taken) goes in a part of
// its own. A stale view (slots moved since) can put two shards' slots in
// one part, which then waits for the slower; it is taken again every
// shardViewAge, and after a round with a failed call.
type shardView struct {
	mu      sync.Mutex
	of      []int32 // slot -> shard + 1 (0: unknown); nil until the first view
	taken   time.Time
	pending bool // a view is being taken
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

// refreshShards takes a new view in the background, unless one is being
// taken or the view is younger than shardViewAge (stale: take it anyway). It is
// bounded by the renew interval and ends with the renewer's context; the
// renewer's close waits for it (calls).
func (r *renewer) refreshShards(stale bool) {
	v := &r.shards
	v.mu.Lock()
	if v.pending || !stale && v.of != nil && time.Since(v.taken) < shardViewAge {
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
		v.pending = false
		if of != nil {
			v.of, v.taken = of, time.Now()
		}
	}()
}

// shardTable maps each slot of a CLUSTER SLOTS answer to its primary's
// index + 1 (0: no primary serves it), or nil if the answer does not
// parse.
func shardTable(msgs []rueidis.RedisMessage) []int32 {
	ranges, ok := slotRanges(msgs)
	if !ok {
		return nil
	}
	of := make([]int32, 1<<14)
	index := make(map[string]int32)
	for _, rg := range ranges {
		i, ok := index[rg.primary]
		if !ok {
			i = int32(len(index)) + 1
			index[rg.primary] = i
		}
		for s := rg.from; s <= rg.to && s < 1<<14; s++ {
			of[s] = i
		}
	}
	return of
}

// slotRange is one entry of CLUSTER SLOTS: slots from..to, and the
// address of the primary serving them.
type slotRange struct {
	from, to int
	primary  string
}

// slotRanges parses a CLUSTER SLOTS answer; false if it does not parse.
func slotRanges(msgs []rueidis.RedisMessage) ([]slotRange, bool) {
	ranges := make([]slotRange, 0, len(msgs))
	for _, r := range msgs {
		fields, err := r.ToArray()
		if err != nil || len(fields) < 3 {
			return nil, false
		}
		from, ferr := fields[0].AsInt64()
		to, terr := fields[1].AsInt64()
		primary, err := fields[2].ToArray()
		if ferr != nil || terr != nil || err != nil || len(primary) < 2 {
			return nil, false
		}
		host, herr := primary[0].ToString()
		port, perr := primary[1].AsInt64()
		if herr != nil || perr != nil {
			return nil, false
		}
		ranges = append(ranges, slotRange{from: int(from), to: int(to), primary: net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	return ranges, true
}
