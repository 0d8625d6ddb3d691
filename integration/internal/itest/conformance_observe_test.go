package itest

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// TestInspectEarlierTokenJudgedByReadTime replays the mutex finding: a
// first hold granted (token t1), its reply lost; the fence key, kept a
// second, expired; the attempt's retry found the hold and minted t2, 1.16 s
// after t1 (lua/redisson_lock_acquire.lua), which Lock returned. An Inspect
// that read the lock before that retry reported the hold with t1, but its
// reply reached the test only after t2 was minted. It is judged by when
// its script read the lock (LockInfo.Time, the server's clock tokens are
// minted from), not by when its reply came; one that read after the mint
// and reported t1 is still a violation.
func TestInspectEarlierTokenJudgedByReadTime(t *testing.T) {
	base := time.Now().Truncate(time.Millisecond)
	t1 := uint64(base.UnixMicro())
	t2 := uint64(base.Add(1160 * time.Millisecond).UnixMicro())
	const name, owner = "conf-m", "6f1c3a2e-0000-4000-8000-000000000000:7"
	for _, tc := range []struct {
		what      string
		read      time.Duration // the Inspect's LockInfo.Time, from base
		replied   time.Duration // when its reply reached the test (t1), from base
		violation bool
	}{
		{"read before the retry, reply after its mint", 900 * time.Millisecond, 1200 * time.Millisecond, false},
		{"read and replied well before the mint", 300 * time.Millisecond, 310 * time.Millisecond, false},
		{"read after the mint", 1170 * time.Millisecond, 1175 * time.Millisecond, true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			o := newConfOracle("mutex", base.Add(-time.Second), &confFaults{}, time.Second)
			h := &confHold{id: 1, Name: name, Owner: 1, wire: owner, mode: fairrw.Write, token: t2, op: "Lock", Client: "c0",
				callStart: base.Add(-10 * time.Millisecond), granted: base.Add(1165 * time.Millisecond)}
			o.Writes[name] = []confWriteGrant{{hold: h, returned: h.granted}}
			o.inspects = []confInspectWrite{{Name: name, Owner: owner, token: t1,
				t0: base.Add(tc.read - 5*time.Millisecond), t1: base.Add(tc.replied), at: base.Add(tc.read)}}
			o.checkInspectWrites(false)
			if got := o.byKind["inspect/token"] > 0; got != tc.violation {
				t.Fatalf("inspect/token reported: %v, want %v (violations: %v)", got, tc.violation, o.violations)
			}
		})
	}
}
