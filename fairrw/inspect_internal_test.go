package fairrw

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/wire"
)

// TestDescribe: how each format's raw keys read as a LockInfo, entries
// whose deadline passed left out, at the same instant as the scripts count
// them (an entry counts while now <= its deadline).
func TestDescribe(t *testing.T) {
	const now = 1_000_000
	none := wire.Zset{Type: "none"}
	zset := func(pairs ...any) wire.Zset {
		z := wire.Zset{Type: "zset"}
		for i := 0; i+1 < len(pairs); i += 2 {
			z.Members = append(z.Members, wire.ZMember{Member: pairs[i].(string), Score: int64(pairs[i+1].(int))})
		}
		return z
	}
	base := func() *inspectRaw {
		return &inspectRaw{wire.Inspected{Now: now, HashType: "none", HashTTL: -2, StateType: "none", Readers: none, Queue: none, Waiting: none, Admitted: none, FenceType: "none"}}
	}
	tests := []struct {
		name      string
		raw       func() *inspectRaw
		leaseKeys []string
		policy    string
		holders   []string // "<mode> <owner> x<holds> <remaining>"
		writers   []string // "<owner> <remaining> <lease>"
		readers   []string // "<owner> <remaining> admitted=<bool>"
		token     uint64
	}{
		{name: "nothing", raw: base},
		{name: "only a token", raw: func() *inspectRaw { r := base(); r.FenceType, r.Fence = "string", "77"; return r }, token: 77},
		{
			name: "fair write, readers, queue",
			raw: func() *inspectRaw {
				r := base()
				r.StateType = "hash"
				r.State = map[string]string{"policy": "writer-preferring", "writer": "c:1", "wcount": "2", "wdeadline": "1000500", "wtoken": "42", "seq": "3",
					"q:c:3": "1000300:30005", "q:c:2": "1000100:20005", "q:c:4": "999999:30005", "future-field": "x"} // a waiter's lease is stored with leaseMargin
				r.Readers = zset("c:9", 999_999, "c:1", 1_000_000)
				r.Queue = zset("c:2", 1, "c:3", 2, "c:4", 3, "c:5", 4) // c:4 dead, c:5 has no entry
				r.FenceType, r.Fence = "string", "41"
				return r
			},
			policy:  "writer-preferring",
			holders: []string{"write c:1 x2 500ms", "read c:1 x0 0s"},
			writers: []string{"c:2 100ms 20s", "c:3 300ms 30s"},
			token:   42,
		},
		{
			name: "fair writer dead: the last token",
			raw: func() *inspectRaw {
				r := base()
				r.StateType = "hash"
				r.State = map[string]string{"policy": "phase-fair", "writer": "c:1", "wcount": "1", "wdeadline": "999999", "wtoken": "42"}
				r.FenceType, r.Fence = "string", "43"
				return r
			},
			policy: "phase-fair",
			token:  43,
		},
		{
			name: "phase-fair waiting and admitted readers, state expired",
			raw: func() *inspectRaw {
				r := base()
				r.Readers = zset("c:1", 1_000_010)
				r.Waiting = zset("c:7", 999_000, "c:8", 1_000_020)
				r.Admitted = zset("c:6", 1_000_030)
				return r
			},
			policy:  "phase-fair",
			holders: []string{"read c:1 x0 10ms"},
			readers: []string{"c:6 30ms admitted=true", "c:8 20ms admitted=false"},
		},
		{
			name:    "fair reads, policy unrecorded",
			raw:     func() *inspectRaw { r := base(); r.Readers = zset("c:2", 1_000_001, "c:1", 1_000_002); return r },
			policy:  policyFair,
			holders: []string{"read c:1 x0 2ms", "read c:2 x0 1ms"},
		},
		{
			name: "Redisson write with a downgrade read",
			raw: func() *inspectRaw {
				r := base()
				r.HashType, r.HashTTL = "hash", 9000
				r.Hash = map[string]string{"mode": "write", "c:1:write": "2", "c:1": "1"}
				r.LeaseTTLs = []int64{4000}
				return r
			},
			leaseKeys: []string{compat.LeaseKey("n", "c:1", 1)},
			policy:    "redisson",
			holders:   []string{"write c:1 x2 9s", "read c:1 x1 4s"},
		},
		{
			name: "Redisson reads: longest lease key, else the hash's",
			raw: func() *inspectRaw {
				r := base()
				r.HashType, r.HashTTL = "hash", 9000
				r.Hash = map[string]string{"mode": "read", "c:1": "2", "c:2": "1", "c:3": "1", "c:4": "many"}
				r.LeaseTTLs = []int64{1000, 5000, -2}
				return r
			},
			leaseKeys: []string{compat.LeaseKey("n", "c:1", 1), compat.LeaseKey("n", "c:1", 2), compat.LeaseKey("n", "c:2", 1)},
			policy:    "redisson",
			holders:   []string{"read c:1 x2 5s", "read c:2 x1 9s", "read c:3 x1 9s"},
		},
		{
			name: "RLock without expiry",
			raw: func() *inspectRaw {
				r := base()
				r.HashType, r.HashTTL, r.Hash = "hash", -1, map[string]string{"j:1": "3"}
				return r
			},
			policy:  policyMutex,
			holders: []string{"write j:1 x3 -1ns"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := tt.raw().describe("n", tt.leaseKeys)
			if err != nil {
				t.Fatal(err)
			}
			if info.Policy != tt.policy || info.Token != tt.token || !info.Time.Equal(time.UnixMilli(now)) {
				t.Fatalf("Policy %q Token %d Time %v, want %q %d", info.Policy, info.Token, info.Time, tt.policy, tt.token)
			}
			var holders, writers, readers []string
			for _, h := range info.Holders {
				holders = append(holders, fmt.Sprintf("%s %s x%d %v", h.Mode, h.Owner, h.Holds, h.Remaining))
			}
			for _, w := range info.WaitingWriters {
				writers = append(writers, fmt.Sprintf("%s %v %v", w.Owner, w.Remaining, w.Lease))
			}
			for _, r := range info.WaitingReaders {
				readers = append(readers, fmt.Sprintf("%s %v admitted=%v", r.Owner, r.Remaining, r.Admitted))
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"holders", holders, tt.holders}, {"waiting writers", writers, tt.writers}, {"waiting readers", readers, tt.readers}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestDescribeForeign: a key of another type at any of the lock's names is
// ErrPolicyMismatch, not a lock.
func TestDescribeForeign(t *testing.T) {
	for _, set := range []func(*inspectRaw){
		func(r *inspectRaw) { r.HashType = "string" },
		func(r *inspectRaw) { r.StateType = "list" },
		func(r *inspectRaw) { r.Readers.Type = "hash" },
		func(r *inspectRaw) { r.Queue.Type = "set" },
		func(r *inspectRaw) { r.Waiting.Type = "stream" },
		func(r *inspectRaw) { r.Admitted.Type = "string" },
		func(r *inspectRaw) { r.FenceType = "hash" },
	} {
		none := wire.Zset{Type: "none"}
		r := &inspectRaw{wire.Inspected{HashType: "none", StateType: "none", Readers: none, Queue: none, Waiting: none, Admitted: none, FenceType: "none"}}
		set(r)
		if _, err := r.describe("n", nil); !errors.Is(err, ErrPolicyMismatch) {
			t.Errorf("%+v: %v, want ErrPolicyMismatch", r, err)
		}
	}
}

// TestInspectLeaseKeys: the lease keys a Redisson hash names (sorted, a
// foreign count skipped), and when a second call is needed.
func TestInspectLeaseKeys(t *testing.T) {
	r := &inspectRaw{wire.Inspected{HashType: "hash", Hash: map[string]string{"mode": "read", "b:1": "2", "a:1": "1", "a:1:write": "1", "x": "-1", "y": "9999999"}}}
	got := r.leaseKeys("n")
	want := []string{compat.LeaseKey("n", "a:1", 1), compat.LeaseKey("n", "b:1", 1), compat.LeaseKey("n", "b:1", 2)}
	if !slices.Equal(got, want) {
		t.Fatalf("leaseKeys = %q, want %q", got, want)
	}
	if !missing(want, nil) || missing(want, want) || missing(nil, nil) || !missing(want, want[:2]) {
		t.Fatal("missing reports wrong")
	}
	mutex := &inspectRaw{wire.Inspected{HashType: "hash", Hash: map[string]string{"a:1": "1"}}}
	if keys := mutex.leaseKeys("n"); keys != nil {
		t.Fatalf("an RLock has lease keys %q", keys)
	}
}
