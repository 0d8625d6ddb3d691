package fairrw

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/compat"
)

// maxLeaseKeys bounds the lease keys Inspect reads for one Redisson reader:
// a count beyond it (no real owner reaches it, a foreign value may) shows
// the hash's time to live rather than building a command that large.
const maxLeaseKeys = 1024

// noExpiry is the Remaining of an entry Redis keeps without a time to live
// (a key written without one, by hand or by a foreign client).
const noExpiry = time.Duration(-1)

// inspectRaw is lua/inspect.lua's reply, decoded but not yet interpreted.
type inspectRaw struct {
	now       int64 // the server's clock, ms
	hashType  string
	hashTTL   int64 // PTTL of the hash N
	hash      map[string]string
	stateType string
	state     map[string]string
	readers   zsetRaw
	queue     zsetRaw
	waiting   zsetRaw
	admitted  zsetRaw
	fenceType string
	fence     string
	leaseTTLs []int64 // PTTL of each lease key passed, in order
}

type zsetRaw struct {
	typ     string
	members []zmember // in score order
}

type zmember struct {
	member string
	score  int64
}

// parseInspect decodes {now, n, s, r, q, w, a, f, leases}.
func parseInspect(res rueidis.RedisResult) (*inspectRaw, error) {
	v, err := res.ToArray()
	if err != nil {
		return nil, redisError(err)
	}
	if len(v) != 9 {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply of %d values", len(v))
	}
	raw := &inspectRaw{}
	var errs [9]error
	raw.now, errs[0] = v[0].AsInt64()
	var n, s, f []string
	n, errs[1] = v[1].AsStrSlice()
	s, errs[2] = v[2].AsStrSlice()
	raw.readers, errs[3] = parseZset(v[3])
	raw.queue, errs[4] = parseZset(v[4])
	raw.waiting, errs[5] = parseZset(v[5])
	raw.admitted, errs[6] = parseZset(v[6])
	f, errs[7] = v[7].AsStrSlice()
	raw.leaseTTLs, errs[8] = v[8].AsIntSlice()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("fairrw: unexpected inspect reply: %w", err)
		}
	}
	if len(n) < 2 || len(s) < 1 || len(f) < 1 {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply: short key description")
	}
	raw.hashType, raw.stateType, raw.fenceType = n[0], s[0], f[0]
	if raw.hashTTL, err = strconv.ParseInt(n[1], 10, 64); err != nil {
		return nil, fmt.Errorf("fairrw: unexpected inspect reply: %w", err)
	}
	raw.hash, raw.state = pairs(n[2:]), pairs(s[1:])
	if len(f) > 1 {
		raw.fence = f[1]
	}
	return raw, nil
}

// parseZset decodes {type, member, score, ...}.
func parseZset(m rueidis.RedisMessage) (zsetRaw, error) {
	v, err := m.AsStrSlice()
	if err != nil || len(v) < 1 {
		return zsetRaw{}, fmt.Errorf("zset description: %v (%w)", v, err)
	}
	z := zsetRaw{typ: v[0]}
	for i := 1; i+1 < len(v); i += 2 {
		score, err := strconv.ParseFloat(v[i+1], 64)
		if err != nil {
			return zsetRaw{}, fmt.Errorf("score %q: %w", v[i+1], err)
		}
		z.members = append(z.members, zmember{member: v[i], score: int64(score)})
	}
	return z, nil
}

func pairs(v []string) map[string]string {
	m := make(map[string]string, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		m[v[i]] = v[i+1]
	}
	return m
}

// redissonRW reports whether N is a Redisson read-write lock hash (it has
// a mode); a hash without one is an RLock's.
func (raw *inspectRaw) redissonRW() bool {
	_, ok := raw.hash[compat.ModeField]
	return raw.hashType == "hash" && ok
}

// leaseKeys names the lease keys of every read hold the Redisson hash
// counts, sorted.
func (raw *inspectRaw) leaseKeys(name string) []string {
	if !raw.redissonRW() {
		return nil
	}
	var keys []string
	for field, v := range raw.hash {
		if field == compat.ModeField || strings.HasSuffix(field, compat.WriteSuffix) {
			continue
		}
		holds, err := strconv.Atoi(v)
		if err != nil || holds < 1 || holds > maxLeaseKeys {
			continue
		}
		for k := 1; k <= holds; k++ {
			keys = append(keys, compat.LeaseKey(name, field, k))
		}
	}
	slices.Sort(keys)
	return keys
}

// missing reports whether want names a key that have does not.
func missing(want, have []string) bool {
	for _, k := range want {
		if _, found := slices.BinarySearch(have, k); !found {
			return true
		}
	}
	return false
}

// describe interprets the reply; leaseKeys are the lease keys it was
// given, in the order of leaseTTLs.
func (raw *inspectRaw) describe(name string, leaseKeys []string) (*LockInfo, error) {
	if err := raw.foreign(); err != nil {
		return nil, err
	}
	info := &LockInfo{Name: name, Time: time.UnixMilli(raw.now)}
	if t, err := strconv.ParseUint(raw.fence, 10, 64); err == nil {
		info.Token = t
	}
	switch {
	case raw.redissonRW():
		info.Policy = Redisson().String()
		raw.describeRedisson(info, name, leaseKeys)
	case raw.hashType == "hash":
		info.Policy = PolicyMutex
		for field, v := range raw.hash {
			if holds, err := strconv.Atoi(v); err == nil {
				info.Holders = append(info.Holders, HolderInfo{Owner: field, Mode: Write, Holds: holds, Remaining: ttl(raw.hashTTL)})
			}
		}
	case raw.stateType == "hash" || raw.readers.typ == "zset" || raw.queue.typ == "zset" ||
		raw.waiting.typ == "zset" || raw.admitted.typ == "zset":
		info.Policy = raw.fairPolicy()
		raw.describeFair(info)
	}
	slices.SortStableFunc(info.Holders, func(a, b HolderInfo) int {
		return cmp.Or(cmp.Compare(b.Mode, a.Mode), strings.Compare(a.Owner, b.Owner)) // Write (2) first
	})
	return info, nil
}

// foreign returns ErrPolicyMismatch when a key of another type sits at one
// of the lock's names: it is not a lock fairrw or Redisson wrote.
func (raw *inspectRaw) foreign() error {
	check := []struct{ typ, want, what string }{
		{raw.hashType, "hash", "the lock's name"},
		{raw.stateType, "hash", "the fair state's name"},
		{raw.readers.typ, "zset", "the readers' name"},
		{raw.queue.typ, "zset", "the queue's name"},
		{raw.waiting.typ, "zset", "the waiting readers' name"},
		{raw.admitted.typ, "zset", "the admitted readers' name"},
		{raw.fenceType, "string", "the fencing token's name"},
	}
	for _, c := range check {
		if c.typ != "none" && c.typ != c.want {
			return &policyError{msg: "a key of another kind (" + c.typ + ") is stored under " + c.what}
		}
	}
	return nil
}

// ttl turns a PTTL into a Remaining.
func ttl(pttl int64) time.Duration {
	if pttl < 0 {
		return noExpiry
	}
	return time.Duration(pttl) * time.Millisecond
}

// describeRedisson reads Redisson's hash: "mode", "<owner>:write" = write
// holds, "<owner>" = read holds, each read hold k with its lease key.
func (raw *inspectRaw) describeRedisson(info *LockInfo, name string, leaseKeys []string) {
	leaseTTL := make(map[string]int64, len(leaseKeys))
	for i, k := range leaseKeys {
		if i < len(raw.leaseTTLs) {
			leaseTTL[k] = raw.leaseTTLs[i]
		}
	}
	for field, v := range raw.hash {
		holds, err := strconv.Atoi(v)
		if field == compat.ModeField || err != nil {
			continue
		}
		if owner, ok := strings.CutSuffix(field, compat.WriteSuffix); ok {
			info.Holders = append(info.Holders, HolderInfo{Owner: owner, Mode: Write, Holds: holds, Remaining: ttl(raw.hashTTL)})
			continue
		}
		longest := int64(0)
		for k := 1; k <= min(holds, maxLeaseKeys); k++ {
			longest = max(longest, leaseTTL[compat.LeaseKey(name, field, k)])
		}
		remaining := time.Duration(longest) * time.Millisecond
		if longest <= 0 {
			remaining = ttl(raw.hashTTL) // the hash keeps the owner's field while it lives
		}
		info.Holders = append(info.Holders, HolderInfo{Owner: field, Mode: Read, Holds: holds, Remaining: remaining})
	}
}

// fairPolicy names the fair policy of the state: recorded in it, or
// phase-fair when a key only it writes exists.
func (raw *inspectRaw) fairPolicy() string {
	if p := raw.state["policy"]; p != "" {
		return p
	}
	if raw.waiting.typ == "zset" || raw.admitted.typ == "zset" {
		return PhaseFair().String()
	}
	return PolicyFair
}

// describeFair reads the fair policies' keys (lua/fair_lib.lua). An entry
// counts while now <= its deadline, as there.
func (raw *inspectRaw) describeFair(info *LockInfo) {
	now := raw.now
	left := func(deadline int64) time.Duration { return time.Duration(deadline-now) * time.Millisecond }
	if w := raw.state["writer"]; w != "" {
		deadline, err := strconv.ParseInt(raw.state["wdeadline"], 10, 64)
		if err == nil && deadline >= now {
			holds, _ := strconv.Atoi(raw.state["wcount"])
			info.Holders = append(info.Holders, HolderInfo{Owner: w, Mode: Write, Holds: holds, Remaining: left(deadline)})
			if t, err := strconv.ParseUint(raw.state["wtoken"], 10, 64); err == nil {
				info.Token = t
			}
		}
	}
	for _, r := range raw.readers.members {
		if r.score >= now {
			info.Holders = append(info.Holders, HolderInfo{Owner: r.member, Mode: Read, Remaining: left(r.score)})
		}
	}
	for _, q := range raw.queue.members {
		d, l, ok := strings.Cut(raw.state["q:"+q.member], ":")
		deadline, err1 := strconv.ParseInt(d, 10, 64)
		lease, err2 := strconv.ParseInt(l, 10, 64)
		if ok && err1 == nil && err2 == nil && deadline >= now {
			info.WaitingWriters = append(info.WaitingWriters, WaiterInfo{Owner: q.member, Remaining: left(deadline), Lease: max(time.Duration(lease)*time.Millisecond-LeaseMargin, 0)})
		}
	}
	for _, a := range raw.admitted.members {
		if a.score >= now {
			info.WaitingReaders = append(info.WaitingReaders, WaiterInfo{Owner: a.member, Remaining: left(a.score), Admitted: true})
		}
	}
	for _, w := range raw.waiting.members {
		if w.score >= now {
			info.WaitingReaders = append(info.WaitingReaders, WaiterInfo{Owner: w.member, Remaining: left(w.score)})
		}
	}
}
