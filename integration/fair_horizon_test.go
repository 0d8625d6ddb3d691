package integration

import (
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/redisinfo"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestFairRenewalHorizon: under the fair policies a renewed write keeps its
// state hash alive past its deadline at every moment, by no more than half
// a lease, and moves the hash's expiry only every other round (the hash's
// "horizon" field says how far it is covered). A lock whose holder is gone
// (never released, never renewed) is gone from Redis by its deadline plus
// half its lease.
func TestFairRenewalHorizon(t *testing.T) {
	const lease = 300 * time.Millisecond // renewed every 100ms
	e := newWireEnv(t)
	forEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		n := "fair:horizon:" + code
		fk := fwire.Fair(n)
		c := newClient(t, e.r, transports[1], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
		l := mustLock(t, c.RWMutex(n), fairrw.Write)
		ctx := testCtx(t)
		before, err := redisinfo.Read(ctx, e.raw)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for time.Since(start) < 12*lease/3 {
			// One script reads all three at one instant: a renewal between
			// separate reads would pair an old deadline with a new expiry.
			v, err := e.raw.Do(ctx, e.raw.B().Eval().Script(horizonProbe).Numkeys(1).Key(fk.State).Build()).AsIntSlice()
			if err != nil || len(v) != 3 {
				t.Fatalf("state %v: %v", v, err)
			}
			wd, h, expiry := v[0], v[1], v[2]
			if expiry < wd || expiry < h {
				t.Fatalf("state hash expires at %d, before the writer's deadline %d or its horizon %d", expiry, wd, h)
			}
			// Redis keeps a hold LeaseMargin past its lease: half of that.
			half := (lease + hidden.LeaseMargin) / 2
			if over := time.Duration(expiry-wd) * time.Millisecond; over > half {
				t.Fatalf("state hash expires %v after the writer's deadline, more than half the lease (%v)", over, half)
			}
			time.Sleep(7 * time.Millisecond)
		}
		after, err := redisinfo.Read(ctx, e.raw)
		if err != nil {
			t.Fatal(err)
		}
		d := after.Sub(before)
		rounds, moves := d["evalsha"].Calls, d["pexpireat"].Calls // the probe runs by EVAL
		// About 12 rounds: a renewal moves the hash's expiry every other one.
		if rounds < 8 || moves > rounds*2/3 {
			t.Fatalf("%d renewal calls moved the hash's expiry %d times; want about every other one", rounds, moves)
		}
		t.Logf("%d renewal calls, %d PEXPIREATs", rounds, moves)
		mustUnlock(t, l)

		// A holder that is gone: the write taken by the script itself, with
		// that lease, and never renewed or released.
		owner := "gone-client:1"
		err = e.raw.Do(ctx, e.raw.B().Eval().Script(lua.FairAcquire()).Numkeys(9).
			Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fwire.Fence(n), fk.Channel, n, fwire.OwnerMarker(n, owner)).
			Arg(args([]string{fwire.PolicyRecord(code, fwire.Protocol), "w", owner, strconv.Itoa(int(lease.Milliseconds())), "300"}, stamped(), []string{"publish", "1", "0", "0"})...).Build()).Error()
		if err != nil {
			t.Fatal(err)
		}
		wd, err := e.raw.Do(ctx, e.raw.B().Hget().Key(fk.State).Field("wdeadline").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		gone := time.UnixMilli(wd).Add(lease / 2)
		time.Sleep(time.Until(gone) + 20*time.Millisecond)
		// EXISTS expires a key whose time has come, whatever the
		// background cycle did.
		if k, err := e.raw.Do(ctx, e.raw.B().Exists().Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted).Build()).AsInt64(); err != nil || k != 0 {
			t.Fatalf("%d keys of a lock whose holder is gone left %v after its deadline plus half its lease (%v)", k, time.Since(gone)+lease/2, err)
		}
	})
}

// horizonProbe returns the writer's deadline, the horizon and the expiry
// (ms) of the state hash KEYS[1].
const horizonProbe = `return {tonumber(redis.call('hget', KEYS[1], 'wdeadline')),
  tonumber(redis.call('hget', KEYS[1], 'horizon')), redis.call('pexpiretime', KEYS[1])}`

// TestFairTokenAheadOfClock: a write's fencing token is above the last one
// even when that one is ahead of the server's clock (grants within one
// microsecond), which mint takes from the SET that writes the new token.
func TestFairTokenAheadOfClock(t *testing.T) {
	e := newWireEnv(t)
	forEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		n := "fair:token-ahead:" + code
		ctx := testCtx(t)
		ahead := uint64(time.Now().UnixMicro()) + 1e12
		if err := e.raw.Do(ctx, e.raw.B().Set().Key(fwire.Fence(n)).Value(strconv.FormatUint(ahead, 10)).PxMilliseconds(5000).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, e.r, transports[1], fairrw.WithPolicy(p))
		l := mustLock(t, c.RWMutex(n), fairrw.Write)
		// Each mint is at least wire.TokenReserve above the last: the
		// tokens in between are the grant's, for its Client's cohort.
		if l.Token() != ahead+fwire.TokenReserve {
			t.Fatalf("token %d after a last token %d ahead of the clock; want %d", l.Token(), ahead, ahead+fwire.TokenReserve)
		}
		mustUnlock(t, l)
		l = mustLock(t, c.RWMutex(n), fairrw.Write)
		if l.Token() != ahead+2*fwire.TokenReserve {
			t.Fatalf("next token %d; want %d", l.Token(), ahead+2*fwire.TokenReserve)
		}
		mustUnlock(t, l)
	})
}

// forEachFair runs body as a subtest per fair policy, with the policy's
// name as its scripts take it.
func forEachFair(t *testing.T, body func(t *testing.T, p fairrw.Policy, code string)) {
	for _, p := range fairPolicies {
		t.Run(p.String(), func(t *testing.T) { body(t, p, p.String()) })
	}
}
