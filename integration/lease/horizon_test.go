package lease

import (
	"strconv"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
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
	e := itest.NewWireEnv(t)
	itest.ForEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		n := "fair:horizon:" + code
		fk := fwire.Fair(n)
		c := itest.NewClient(t, e.R, itest.Transports[1], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease))
		l := itest.MustLock(t, c.RWMutex(n), fairrw.Write)
		ctx := itest.TestCtx(t)
		before, err := redisinfo.Read(ctx, e.Raw)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for time.Since(start) < 12*lease/3 {
			// One script reads all three at one instant: a renewal between
			// separate reads would pair an old deadline with a new expiry.
			v, err := e.Raw.Do(ctx, e.Raw.B().Eval().Script(horizonProbe).Numkeys(1).Key(fk.State).Build()).AsIntSlice()
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
		after, err := redisinfo.Read(ctx, e.Raw)
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
		itest.MustUnlock(t, l)

		// A holder that is gone: the write taken by the script itself, with
		// that lease, and never renewed or released.
		owner := "gone-client:1"
		err = e.Raw.Do(ctx, e.Raw.B().Eval().Script(lua.FairAcquire()).Numkeys(9).
			Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fwire.Fence(n), fk.Channel, n, fwire.OwnerMarker(n, owner)).
			Arg(itest.Args([]string{fwire.PolicyRecord(code, fwire.Protocol), "w", owner, strconv.Itoa(int(lease.Milliseconds())), "300"}, itest.Stamped(), []string{"publish", "1", "0", "0"})...).Build()).Error()
		if err != nil {
			t.Fatal(err)
		}
		wd, err := e.Raw.Do(ctx, e.Raw.B().Hget().Key(fk.State).Field("wdeadline").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		gone := time.UnixMilli(wd).Add(lease / 2)
		time.Sleep(time.Until(gone) + 20*time.Millisecond)
		// EXISTS expires a key whose time has come, whatever the
		// background cycle did.
		if k, err := e.Raw.Do(ctx, e.Raw.B().Exists().Key(fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted).Build()).AsInt64(); err != nil || k != 0 {
			t.Fatalf("%d keys of a lock whose holder is gone left %v after its deadline plus half its lease (%v)", k, time.Since(gone)+lease/2, err)
		}
	})
}

// horizonProbe returns the writer's deadline, the horizon and the expiry
// (ms) of the state hash KEYS[1].
const horizonProbe = `return {tonumber(redis.call('hget', KEYS[1], 'wdeadline')),
  tonumber(redis.call('hget', KEYS[1], 'horizon')), redis.call('pexpiretime', KEYS[1])}`

// TestFairTokenAheadOfClock: a write's fencing token is above the top of
// the last token range even when that is ahead of the server's clock (a
// range left open by a write that ended without its release), which mint
// takes from the SET that writes the new range. A plain Lock asks for no
// range (no Lock of its cohort waits): its token is one above the last,
// and its release leaves the next one above it. (Protocol 3 minted
// wire.TokenReserve above the last token, whatever was handed out: this
// test's expectations changed with protocol 4.)
func TestFairTokenAheadOfClock(t *testing.T) {
	e := itest.NewWireEnv(t)
	itest.ForEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		n := "fair:token-ahead:" + code
		ctx := itest.TestCtx(t)
		ahead := uint64(time.Now().UnixMicro()) + 1e12
		if err := e.Raw.Do(ctx, e.Raw.B().Set().Key(fwire.Fence(n)).Value(strconv.FormatUint(ahead, 10)).PxMilliseconds(5000).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		c := itest.NewClient(t, e.R, itest.Transports[1], fairrw.WithPolicy(p))
		l := itest.MustLock(t, c.RWMutex(n), fairrw.Write)
		if l.Token() != ahead+1 {
			t.Fatalf("token %d after a range topped at %d, ahead of the clock; want %d", l.Token(), ahead, ahead+1)
		}
		itest.MustUnlock(t, l)
		l = itest.MustLock(t, c.RWMutex(n), fairrw.Write)
		if l.Token() != ahead+2 {
			t.Fatalf("next token %d; want %d", l.Token(), ahead+2)
		}
		itest.MustUnlock(t, l)
	})
}
