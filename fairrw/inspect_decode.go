package fairrw

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/wire"
)

// maxLeaseKeys bounds the lease keys Inspect reads for one Redisson reader:
// a count beyond it (no real owner reaches it, a foreign value may) shows
// the hash's time to live rather than building a command that large.
const maxLeaseKeys = 1024

// noExpiry is the Remaining of an entry Redis keeps without a time to live
// (a key written without one, by hand or by a foreign client).
const noExpiry = time.Duration(-1)

// inspectRaw is lua/inspect.lua's reply, decoded but not yet interpreted.
type inspectRaw struct{ wire.Inspected }

// parseInspect decodes the reply (wire.DecodeInspect).
func parseInspect(res rueidis.RedisResult) (*inspectRaw, error) {
	in, err := wire.DecodeInspect(res)
	if err != nil {
		return nil, redisError(err)
	}
	return &inspectRaw{*in}, nil
}

// redissonRW reports whether N is a Redisson read-write lock hash (it has
// a mode); a hash without one is an RLock's.
func (raw *inspectRaw) redissonRW() bool {
	_, ok := raw.Hash[compat.ModeField]
	return raw.HashType == "hash" && ok
}

// leaseKeys names the lease keys of every read hold the Redisson hash
// counts, sorted.
func (raw *inspectRaw) leaseKeys(name string) []string {
	if !raw.redissonRW() {
		return nil
	}
	var keys []string
	for field, v := range raw.Hash {
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
	info := &LockInfo{Name: name, Time: time.UnixMilli(raw.Now)}
	if t, err := strconv.ParseUint(raw.Fence, 10, 64); err == nil {
		info.Token = t
	}
	switch {
	case raw.redissonRW():
		info.Policy = Redisson().String()
		raw.describeRedisson(info, name, leaseKeys)
	case raw.HashType == "hash":
		info.Policy = policyMutex
		for field, v := range raw.Hash {
			if holds, err := strconv.Atoi(v); err == nil {
				info.Holders = append(info.Holders, HolderInfo{Owner: field, Mode: Write, Holds: holds, Remaining: ttl(raw.HashTTL)})
			}
		}
	case raw.StateType == "hash" || raw.Readers.Type == "zset" || raw.Queue.Type == "zset" ||
		raw.Waiting.Type == "zset" || raw.Admitted.Type == "zset":
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
		{raw.HashType, "hash", "the lock's name"},
		{raw.StateType, "hash", "the fair state's name"},
		{raw.Readers.Type, "zset", "the readers' name"},
		{raw.Queue.Type, "zset", "the queue's name"},
		{raw.Waiting.Type, "zset", "the waiting readers' name"},
		{raw.Admitted.Type, "zset", "the admitted readers' name"},
		{raw.FenceType, "string", "the fencing token's name"},
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
		if i < len(raw.LeaseTTLs) {
			leaseTTL[k] = raw.LeaseTTLs[i]
		}
	}
	for field, v := range raw.Hash {
		holds, err := strconv.Atoi(v)
		if field == compat.ModeField || err != nil {
			continue
		}
		if owner, ok := strings.CutSuffix(field, compat.WriteSuffix); ok {
			info.Holders = append(info.Holders, HolderInfo{Owner: owner, Mode: Write, Holds: holds, Remaining: ttl(raw.HashTTL)})
			continue
		}
		longest := int64(0)
		for k := 1; k <= min(holds, maxLeaseKeys); k++ {
			longest = max(longest, leaseTTL[compat.LeaseKey(name, field, k)])
		}
		remaining := time.Duration(longest) * time.Millisecond
		if longest <= 0 {
			remaining = ttl(raw.HashTTL) // the hash keeps the owner's field while it lives
		}
		info.Holders = append(info.Holders, HolderInfo{Owner: field, Mode: Read, Holds: holds, Remaining: remaining})
	}
}

// fairPolicy names the fair policy of the state: recorded in it, or
// phase-fair when a key only it writes exists.
func (raw *inspectRaw) fairPolicy() string {
	if rec := raw.State["policy"]; rec != "" {
		p, _ := wire.ParsePolicyRecord(rec)
		return p
	}
	if raw.Waiting.Type == "zset" || raw.Admitted.Type == "zset" {
		return PhaseFair().String()
	}
	return policyFair
}

// describeFair reads the fair policies' keys (lua/fair_lib.lua). An entry
// counts while now <= its deadline, as there.
func (raw *inspectRaw) describeFair(info *LockInfo) {
	now := raw.Now
	left := func(deadline int64) time.Duration { return time.Duration(deadline-now) * time.Millisecond }
	if w := raw.State["writer"]; w != "" {
		deadline, err := strconv.ParseInt(raw.State["wdeadline"], 10, 64)
		if err == nil && deadline >= now {
			holds, _ := strconv.Atoi(raw.State["wcount"])
			info.Holders = append(info.Holders, HolderInfo{Owner: w, Mode: Write, Holds: holds, Remaining: left(deadline)})
			if t, err := strconv.ParseUint(raw.State["wtoken"], 10, 64); err == nil {
				info.Token = t
			}
		}
	}
	for _, r := range raw.Readers.Members {
		if r.Score >= now {
			info.Holders = append(info.Holders, HolderInfo{Owner: r.Member, Mode: Read, Remaining: left(r.Score)})
		}
	}
	for _, q := range raw.Queue.Members {
		d, l, ok := strings.Cut(raw.State["q:"+q.Member], ":")
		deadline, err1 := strconv.ParseInt(d, 10, 64)
		lease, err2 := strconv.ParseInt(l, 10, 64)
		if ok && err1 == nil && err2 == nil && deadline >= now {
			info.WaitingWriters = append(info.WaitingWriters, WaiterInfo{Owner: q.Member, Remaining: left(deadline), Lease: max(time.Duration(lease)*time.Millisecond-leaseMargin, 0)})
		}
	}
	for _, a := range raw.Admitted.Members {
		if a.Score >= now {
			info.WaitingReaders = append(info.WaitingReaders, WaiterInfo{Owner: a.Member, Remaining: left(a.Score), Admitted: true})
		}
	}
	for _, w := range raw.Waiting.Members {
		if w.Score >= now {
			info.WaitingReaders = append(info.WaitingReaders, WaiterInfo{Owner: w.Member, Remaining: left(w.Score)})
		}
	}
}
