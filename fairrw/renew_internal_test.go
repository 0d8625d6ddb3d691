package fairrw

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/slot"
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
// a cluster in one per slot, so that a shard that does not answer holds
// back no other shard's confirmations (a killed primary once left the live
// shards' leases half their margin), every call in exactly one part.
func TestRenewParts(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		r := &renewer{c: &Client{conf: settings{policy: redissonPolicy{}, leaseTime: 30 * time.Second}, cluster: cluster}}
		calls, batches := r.batches(renewHolds(t))
		parts := r.parts(calls, batches)
		if !cluster {
			if len(parts) != 1 || len(parts[0].calls) != len(calls) {
				t.Fatalf("single Redis: %d parts; want one of all %d calls", len(parts), len(calls))
			}
			continue
		}
		slots := map[uint16]bool{}
		n := 0
		for i, p := range parts {
			if len(p.calls) != len(p.batches) {
				t.Fatalf("part %d: %d calls, %d batches", i, len(p.calls), len(p.batches))
			}
			s := slot.Of(p.calls[0].Keys[0])
			if slots[s] {
				t.Fatalf("slot %d split over two parts", s)
			}
			slots[s] = true
			for j, call := range p.calls {
				for _, k := range call.Keys {
					if slot.Of(k) != s {
						t.Fatalf("part %d mixes slots %d and %d", i, s, slot.Of(k))
					}
				}
				if p.batches[j][0].m.keys.slot != s {
					t.Fatalf("part %d: call %d's holds are of slot %d", i, j, p.batches[j][0].m.keys.slot)
				}
			}
			n += len(p.calls)
		}
		// 250 holds of {tenant} take 3 calls in one part; 30 names of
		// their own, one part each unless two share a slot.
		if n != len(calls) || len(parts) != len(slots) || len(parts) < 2 || len(parts) > 31 {
			t.Fatalf("cluster: %d parts carry %d of %d calls over %d slots", len(parts), n, len(calls), len(slots))
		}
	}
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
