package wire

import (
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// Inspect is lua/inspect.lua's request: read everything a lock keeps, under
// whichever policy holds it. It takes no ARGV.
type Inspect struct {
	Name string
	// Keys is Fair(Name).
	Keys FairKeys
	// LeaseKeys are lease keys of Redisson read holds, as an earlier call
	// named them (none at first).
	LeaseKeys []string
}

var (
	inspectKeys = layout[Inspect, string]{
		head: []column[Inspect]{
			{"lock name", func(r *Inspect) string { return r.Name }},
			{"state hash", func(r *Inspect) string { return r.Keys.State }},
			{"readers zset", func(r *Inspect) string { return r.Keys.Readers }},
			{"waiting writers", func(r *Inspect) string { return r.Keys.Queue }},
			{"waiting readers", func(r *Inspect) string { return r.Keys.Waiting }},
			{"admitted readers", func(r *Inspect) string { return r.Keys.Admitted }},
			{"fencing token", func(r *Inspect) string { return r.Keys.Fence }},
		},
		each:    []column[string]{{"lease keys", func(k *string) string { return *k }}},
		entries: func(r *Inspect) []string { return r.LeaseKeys },
	}
	inspectArgs = fixed[Inspect]()
)

// Render returns the script's KEYS and ARGV (none). Its reply is
// DecodeInspect's.
func (r *Inspect) Render() (keys, args []string) {
	return renderBoth(&inspectKeys, &inspectArgs, r)
}

// Inspected is lua/inspect.lua's reply, decoded but not interpreted (fairrw
// reads it as a LockInfo): every key's type, and what it holds.
type Inspected struct {
	Now       int64 // the server's clock, ms
	HashType  string
	HashTTL   int64 // PTTL of the hash N
	Hash      map[string]string
	StateType string
	State     map[string]string
	Readers   Zset
	Queue     Zset
	Waiting   Zset
	Admitted  Zset
	FenceType string
	Fence     string
	LeaseTTLs []int64 // PTTL of each lease key passed, in order
}

// Zset is a sorted set's type and members, in score order (members only
// when it is a zset).
type Zset struct {
	Type    string
	Members []ZMember
}

// ZMember is one member of a Zset.
type ZMember struct {
	Member string
	Score  int64
}

// DecodeInspect reads {now, n, s, r, q, w, a, f, leases}.
func DecodeInspect(res rueidis.RedisResult) (*Inspected, error) {
	v, err := res.ToArray()
	if err != nil {
		return nil, err
	}
	if len(v) != 9 {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply of %d values", len(v))
	}
	in := &Inspected{}
	var errs [9]error
	in.Now, errs[0] = v[0].AsInt64()
	var n, s, f []string
	n, errs[1] = v[1].AsStrSlice()
	s, errs[2] = v[2].AsStrSlice()
	in.Readers, errs[3] = decodeZset(v[3])
	in.Queue, errs[4] = decodeZset(v[4])
	in.Waiting, errs[5] = decodeZset(v[5])
	in.Admitted, errs[6] = decodeZset(v[6])
	f, errs[7] = v[7].AsStrSlice()
	in.LeaseTTLs, errs[8] = v[8].AsIntSlice()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("fairrw: unexpected inspect reply: %w", err)
		}
	}
	if len(n) < 2 || len(s) < 1 || len(f) < 1 {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply: short key description")
	}
	in.HashType, in.StateType, in.FenceType = n[0], s[0], f[0]
	if in.HashTTL, err = strconv.ParseInt(n[1], 10, 64); err != nil {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply: %w", err)
	}
	in.Hash, in.State = pairs(n[2:]), pairs(s[1:])
	if len(f) > 1 {
		in.Fence = f[1]
	}
	return in, nil
}

// decodeZset reads {type, member, score, ...}.
func decodeZset(m rueidis.RedisMessage) (Zset, error) {
	v, err := m.AsStrSlice()
	if err != nil || len(v) < 1 {
		return Zset{}, fmt.Errorf("zset description: %v (%w)", v, err)
	}
	z := Zset{Type: v[0]}
	for i := 1; i+1 < len(v); i += 2 {
		score, err := strconv.ParseFloat(v[i+1], 64)
		if err != nil {
			return Zset{}, fmt.Errorf("score %q: %w", v[i+1], err)
		}
		z.Members = append(z.Members, ZMember{Member: v[i], Score: int64(score)})
	}
	return z, nil
}

// pairs reads {field, value, ...}.
func pairs(v []string) map[string]string {
	m := make(map[string]string, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		m[v[i]] = v[i+1]
	}
	return m
}
