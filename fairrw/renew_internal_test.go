package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/fairrw/rwlock/internal/wire"
)

// renewHolds returns 250 holds on one slot (a shared hash tag), and 30 on
// names of their own.
func renewHolds(t *testing.T) []*renewHold {
	var holds []*renewHold
	for i := range 250 {
		holds = append(holds, testHold(t, fmt.Sprintf("{tenant}:lock:%d", i), Write))
	}
	for i := range 30 {
		holds = append(holds, testHold(t, fmt.Sprintf("lock:%d", i), Read))
	}
	return holds
}

// TestRenewBatchesSingleRedis: on a single Redis, holds of any slots share
// script calls of maxRenewBatch: 280 holds take ceil(280/100) = 3 calls.
func TestRenewBatchesSingleRedis(t *testing.T) {
	r := &renewer{c: &Client{conf: settings{policy: redissonPolicy{}, leaseTime: 30 * time.Second}}}
	holds := renewHolds(t)
	calls, batches := r.batches(holds)
	if len(calls) != 3 || len(batches) != 3 {
		t.Fatalf("%d calls, %d batches; want 3", len(calls), len(batches))
	}
	seen := map[*renewHold]bool{}
	for i, b := range batches {
		if want := min(maxRenewBatch, len(holds)-i*maxRenewBatch); len(b) != want || len(calls[i].Keys) != want {
			t.Fatalf("batch %d: %d holds, %d keys; want %d", i, len(b), len(calls[i].Keys), want)
		}
		for _, h := range b {
			seen[h] = true
		}
	}
	if len(seen) != len(holds) {
		t.Fatalf("%d distinct holds renewed, want %d", len(seen), len(holds))
	}
}

// TestRenewBatches: on a cluster, holds are grouped by slot, at most
// maxRenewBatch to a script call, and each call's keys share one slot.
func TestRenewBatches(t *testing.T) {
	c := &Client{conf: settings{policy: redissonPolicy{}, leaseTime: 30 * time.Second}, cluster: true}
	r := &renewer{c: c}
	holds := renewHolds(t)
	calls, batches := r.batches(holds)
	if len(calls) != len(batches) {
		t.Fatalf("%d calls, %d batches", len(calls), len(batches))
	}
	total := 0
	for i, call := range calls {
		if n := len(call.Keys); n == 0 || n > maxRenewBatch {
			t.Fatalf("call %d has %d keys", i, n)
		}
		if len(call.Args) != 1+3*len(call.Keys) || call.Args[0] != wire.HoldMillis(30*time.Second) {
			t.Fatalf("call %d args %v", i, call.Args[:4])
		}
		want := slot.Of(call.Keys[0])
		for _, k := range call.Keys {
			if slot.Of(k) != want {
				t.Fatalf("call %d mixes slots: %s", i, k)
			}
		}
		total += len(call.Keys)
	}
	if total != len(holds) {
		t.Fatalf("%d holds renewed, want %d", total, len(holds))
	}
	tenant := 0
	for _, call := range calls {
		if slot.Of(call.Keys[0]) == slot.Of("{tenant}") {
			tenant++
		}
	}
	if tenant != 3 {
		t.Fatalf("250 holds of one slot took %d calls, want 3", tenant)
	}
}

// TestRenewParts: a round's calls go in one DoMulti on a single Redis; on
// a cluster in one per shard, as the renewer's view of the cluster has
// them, and in one per slot the view does not know (no view yet), so that
// a shard that does not answer holds back no other shard's confirmations
// (a killed primary once left the live shards' leases half their
// margin). Every call is in exactly one part, and a part never mixes two
// shards of the view.
func TestRenewParts(t *testing.T) {
	newRenewer := func(cluster bool) *renewer {
		return &renewer{c: &Client{conf: settings{policy: redissonPolicy{}, leaseTime: 30 * time.Second}, cluster: cluster}}
	}
	r := newRenewer(false)
	calls, batches := r.batches(renewHolds(t))
	if parts := r.parts(calls, batches); len(parts) != 1 || len(parts[0].calls) != len(calls) {
		t.Fatalf("single Redis: %d parts; want one of all %d calls", len(parts), len(calls))
	}

	// shardOf is the view's shard of a slot, -1 where it has none.
	check := func(what string, r *renewer, shardOf func(uint16) int32, wantParts int) {
		t.Helper()
		calls, batches := r.batches(renewHolds(t))
		parts := r.parts(calls, batches)
		seen := map[int32]bool{}
		n := 0
		for i, p := range parts {
			if len(p.calls) != len(p.batches) {
				t.Fatalf("%s: part %d: %d calls, %d batches", what, i, len(p.calls), len(p.batches))
			}
			first := slot.Of(p.calls[0].Keys[0])
			k := shardOf(first)
			if k < 0 {
				k = -1 - int32(first)
			}
			if seen[k] {
				t.Fatalf("%s: shard (or unknown slot) %d split over two parts", what, k)
			}
			seen[k] = true
			for j, call := range p.calls {
				s := slot.Of(call.Keys[0])
				if got := shardOf(s); got != shardOf(first) || got < 0 && s != first {
					t.Fatalf("%s: part %d mixes slot %d (shard %d) with slot %d (shard %d)", what, i, s, got, first, shardOf(first))
				}
				if p.batches[j][0].m.keys.slot != s {
					t.Fatalf("%s: part %d: call %d's holds are of slot %d, its keys of %d", what, i, j, p.batches[j][0].m.keys.slot, s)
				}
			}
			n += len(p.calls)
		}
		if n != len(calls) || wantParts > 0 && len(parts) != wantParts {
			t.Fatalf("%s: %d parts carry %d of %d calls; want %d parts", what, len(parts), n, len(calls), wantParts)
		}
	}
	// No view: a part per slot. 250 holds of {tenant} take 3 calls in one
	// part; 30 names of their own one part each, unless two share a slot.
	slots := map[uint16]bool{}
	for _, h := range renewHolds(t) {
		slots[h.m.keys.slot] = true
	}
	check("no view", newRenewer(true), func(uint16) int32 { return -1 }, len(slots))

	// A view of two shards, split at slot 8192, that does not know {tenant}'s
	// slot: two parts, and one for that slot.
	r = newRenewer(true)
	tenant := slot.Of("{tenant}")
	r.shards.of = make([]int32, 1<<14)
	for s := range r.shards.of {
		r.shards.of[s] = 1 + int32(s/8192)
	}
	r.shards.of[tenant] = 0
	shardOf := func(s uint16) int32 {
		if s == tenant {
			return -1
		}
		return int32(s / 8192)
	}
	want := 1 // {tenant}
	for _, half := range []int32{0, 1} {
		for s := range slots {
			if s != tenant && shardOf(s) == half {
				want++
				break
			}
		}
	}
	check("a view of two shards", r, shardOf, want)
}

func testHold(t *testing.T, name string, mode Mode) *renewHold {
	keys, err := redissonPolicy{}.keys(name)
	if err != nil {
		t.Fatal(err)
	}
	return &renewHold{m: &RWMutex{keys: keys, policy: redissonPolicy{}}, owner: "client:1", mode: mode}
}

// TestRenewBatchesByScript: a Client's Mutex holds renew with the RLock
// script, its RWMutex holds with its policy's; one call never mixes them.
func TestRenewBatchesByScript(t *testing.T) {
	r := &renewer{c: &Client{conf: settings{policy: WriterPreferring().impl(), leaseTime: 30 * time.Second}}}
	var holds []*renewHold
	for i := range 10 {
		h := testHold(t, "lock:"+strconv.Itoa(i), Write)
		if i%2 == 0 {
			h.m.policy = mutexPolicy{}
		} else {
			h.m.policy = WriterPreferring().impl()
		}
		holds = append(holds, h)
	}
	calls, batches := r.batches(holds)
	if len(calls) != 2 {
		t.Fatalf("10 holds of 2 formats took %d calls, want 2", len(calls))
	}
	for i, call := range calls {
		for _, h := range batches[i] {
			if h.m.policy.renewScript() != call.Script {
				t.Errorf("call %d runs %s, but holds a %s hold", i, call.Script.Name(), h.m.policy.name())
			}
		}
		if len(batches[i]) != 5 {
			t.Errorf("call %d carries %d holds, want 5", i, len(batches[i]))
		}
	}
}

func TestMajorVersion(t *testing.T) {
	for info, want := range map[string]int{
		"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n": 7,
		"redis_version:6.2.1\n": 6,
		"nothing":               0,
	} {
		if got := majorVersion(info); got != want {
			t.Errorf("majorVersion(%q) = %d, want %d", info, got, want)
		}
	}
}

func TestRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if len(id) != 32 {
			t.Fatalf("id %q has %d digits, want 32", id, len(id))
		}
		for _, ch := range id {
			if !('0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f') {
				t.Fatalf("id %q is not lower-case hex", id)
			}
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}

// TestRenewalLossWaitsForUnlock: a renewal that finds the hold gone while
// an Unlock is under way (its script may have run after the release) leaves
// the lease to the Unlock; a held lease is lost at once.
func TestRenewalLossWaitsForUnlock(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	c, err := New(WithClientOption(opt))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	l, err := c.RWMutex("renew-vs-unlock").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := fmt.Errorf("%w: gone", ErrLeaseLost)

	l.mu.Lock()
	l.state = leaseUnlocking // as Unlock sets it before its release
	l.mu.Unlock()
	(&renewHold{mode: Write, leases: []*Lease{l}}).lose(gone, lossGone)
	select {
	case <-l.Done():
		t.Fatalf("a renewal ended a lease whose Unlock was under way: %v", l.Err())
	default:
	}
	l.mu.Lock()
	l.state = leaseHeld
	l.mu.Unlock()
	if err := l.Unlock(ctx); err != nil || l.Err() != nil {
		t.Fatalf("Unlock = %v, Err = %v; want both nil", err, l.Err())
	}

	held, err := c.RWMutex("renew-held").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	(&renewHold{mode: Write, leases: []*Lease{held}}).lose(gone, lossGone)
	select {
	case <-held.Done():
	default:
		t.Fatal("a renewal that found a held lease gone did not end it")
	}
	if !errors.Is(held.Err(), ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", held.Err())
	}
}

// stallSlot is a Redis wrapper whose renewal calls (EVALSHA) of one slot
// get no answer until their ctx ends, as a dead shard's are retried. It
// stands for a cluster whose every slot is a shard of its own: it answers
// no CLUSTER SLOTS (the renewer then keeps no view of the shards), since
// miniredis would answer as one node serving every slot.
type stallSlot struct {
	rueidis.Client
	slot uint16
}

func (s stallSlot) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if args := cmd.Commands(); len(args) > 1 && args[0] == "CLUSTER" && args[1] == "SLOTS" {
		<-ctx.Done()
	}
	return s.Client.Do(ctx, cmd)
}

func (s stallSlot) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, cmd := range cmds {
		if args := cmd.Commands(); len(args) > 3 && args[0] == "EVALSHA" && slot.Of(args[3]) == s.slot {
			<-ctx.Done()
			break
		}
	}
	return s.Client.DoMulti(ctx, cmds...)
}

// TestRenewalStalledSlotHoldsBackNoOther: on a cluster (miniredis answers
// as one), a slot whose renewals get no answer does not hold back the
// others' confirmations: a lease on another slot is confirmed as each
// round's answer comes, so it keeps about a lease less an interval (one
// DoMulti for the round would leave it a lease less two intervals, its
// confirmations waiting for the stalled slot's calls to end with the
// interval), and the stalled slot's lease is lost. Judged against the
// machine's worst lateness of a bare wait meanwhile.
func TestRenewalStalledSlotHoldsBackNoOther(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	const lease = 900 * time.Millisecond
	interval := lease / 3
	stalled := "renew:stalled"
	c, err := New(WithClientOption(opt), WithLeaseTime(lease), withSlowAnswer(time.Second),
		WithRedisWrapper(func(rdb rueidis.Client) rueidis.Client { return stallSlot{rdb, slot.Of(stalled)} }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.onCluster() {
		t.Fatal("miniredis did not answer as a cluster: the test does not reach the case")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	live, err := c.RWMutex("renew:live").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := c.RWMutex(stalled).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slot.Of("renew:live") == slot.Of(stalled) {
		t.Fatal("the two names share a slot")
	}
	ctl := lateness.Start(t)
	least := lease
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		least = min(least, time.Until(live.Deadline()))
	}
	select {
	case <-lost.Done():
	default:
		t.Fatalf("the stalled slot's lease is not lost after %v", 3*lease)
	}
	if live.Err() != nil {
		t.Fatalf("the live slot's lease was lost: %v", live.Err())
	}
	t.Logf("the smallest margin left to the live lease: %v (lease %v, interval %v)", least, lease, interval)
	ctl.WithinWaits("the live lease's margin short of lease - interval, a slot stalled", lease-interval-least, interval/2, 2)
	if err := live.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
