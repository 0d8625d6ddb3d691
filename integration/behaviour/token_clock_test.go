package behaviour

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestTokensFollowTheClock: the release that ends a write closes its
// token range at the highest token handed out of it, and the next grant's
// token is one above that (or the server's clock): tokens advance by the
// tokens handed out, not by a whole range per grant, so they run ahead of
// the clock only if Redis handed out more than a million a second.
// Protocol 3 minted wire.TokenReserve above the last token whatever was
// handed out: above 15,625 grants a second its tokens ran ahead of the
// clock, and a Redis that lost the fence key could then mint a token below
// one already handed out. Checked with the fence key set far ahead of the
// clock, so that every token is the last one's successor: a grant that
// reserved a range and passed nothing, one whose Client passed tokens of
// it, and a range left open (its write never released, as one that
// expired), which holds the next token above the whole range. Then 2000
// grants back to back, in one pipeline, each reserving a range: strictly
// increasing tokens, the last within a range of the clock.
func TestTokensFollowTheClock(t *testing.T) {
	e := itest.NewWireEnv(t)
	itest.ForEachFair(t, func(t *testing.T, p fairrw.Policy, code string) {
		ctx := itest.TestCtx(t)
		n := "token-clock:" + code
		fk := fwire.Fair(n)
		call := func(owner string) fwire.FairCall {
			return fwire.FairCall{Name: n, Keys: fk, Policy: code, Mode: fwire.Write, Owner: owner,
				// A window of a minute: the 2000 calls below are built
				// first, then sent in one pipeline, which took over 10 s
				// with two suites side by side and other work beside them
				// (the last ones stale: not what this test checks).
				Stamp: time.Now(), Window: time.Minute, Publish: "publish", Lease: 30 * time.Second, Queue: 30 * time.Second}
		}
		acquire := func(owner string) rueidis.Completed {
			keys, args := (&fwire.FairAcquire{FairCall: call(owner), Reserve: fwire.TokenReserve}).Render()
			return e.Raw.B().Evalsha().Sha1(sha(lua.FairAcquire())).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		}
		requests := 0
		release := func(owner string, passed uint64) rueidis.Completed {
			requests++
			keys, args := (&fwire.FairUnlock{FairCall: call(owner), Request: fmt.Sprintf("%032x", requests),
				LatchTTL: time.Second, MarkerTTL: time.Second, Passed: passed}).Render()
			return e.Raw.B().Evalsha().Sha1(sha(lua.FairUnlock())).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		}
		for _, src := range []string{lua.FairAcquire(), lua.FairUnlock()} {
			if err := e.Raw.Do(ctx, e.Raw.B().ScriptLoad().Script(src).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		grant := func(owner string) int64 {
			t.Helper()
			token, err := tokenOf(e.Raw.Do(ctx, acquire(owner)))
			if err != nil {
				t.Fatal(err)
			}
			return token
		}
		unlock := func(owner string, passed uint64) {
			t.Helper()
			if err := e.Raw.Do(ctx, release(owner, passed)).Error(); err != nil {
				t.Fatal(err)
			}
		}
		ahead := serverMicros(t, ctx, e.Raw) + 1e12
		if err := e.Raw.Do(ctx, e.Raw.B().Set().Key(fk.Fence).Value(strconv.FormatInt(ahead, 10)).PxMilliseconds(5000).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if got := grant("a"); got != ahead+1 {
			t.Fatalf("token %d after a range topped at %d; want %d", got, ahead, ahead+1)
		}
		unlock("a", 0)
		if got := grant("b"); got != ahead+2 {
			t.Fatalf("token %d after a range closed, with nothing passed, at %d; want %d", got, ahead+1, ahead+2)
		}
		unlock("b", uint64(ahead+2+10)) // its Client passed 10 tokens of its range
		if got := grant("c"); got != ahead+13 {
			t.Fatalf("token %d after a range closed at the passed %d; want %d", got, ahead+12, ahead+13)
		}
		// Left open: never released, its state gone as if it expired.
		if err := e.Raw.Do(ctx, e.Raw.B().Del().Key(fk.State).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if got := grant("d"); got != ahead+13+fwire.TokenReserve {
			t.Fatalf("token %d after a range opened at %d and never closed; want %d, above the whole range", got, ahead+13, ahead+13+fwire.TokenReserve)
		}
		unlock("d", 0)
		if err := e.Raw.Do(ctx, e.Raw.B().Del().Key(fk.Fence).Build()).Error(); err != nil {
			t.Fatal(err)
		}

		const grants = 2000
		var cmds rueidis.Commands
		for i := range grants {
			owner := fmt.Sprintf("clock-test:%d", i)
			cmds = append(cmds, acquire(owner), release(owner, 0))
		}
		start := time.Now()
		var last int64
		for i, res := range e.Raw.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if i%2 == 1 {
				continue
			}
			token, err := tokenOf(res)
			if err != nil {
				t.Fatalf("grant %d: %v", i/2, err)
			}
			if token <= last {
				t.Fatalf("grant %d: token %d not above the last %d", i/2, token, last)
			}
			last = token
		}
		took := time.Since(start)
		off := last - serverMicros(t, ctx, e.Raw)
		t.Logf("%d grants in %v (%.0f/s): the last token is %dµs off the server's clock", grants, took, grants/took.Seconds(), off)
		if off > fwire.TokenReserve {
			t.Errorf("the last token runs %dµs ahead of the server's clock after %d grants, more than one range (%d)", off, grants, fwire.TokenReserve)
		}
	})
}

// sha is a script's SHA1, as EVALSHA names it.
func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// tokenOf reads a fair acquire's grant: the fast path's bare token, or
// {1, token}.
func tokenOf(res rueidis.RedisResult) (int64, error) {
	if n, err := res.AsInt64(); err == nil {
		return n, nil
	}
	v, err := res.AsIntSlice()
	if err != nil || len(v) < 2 || v[0] != 1 {
		return 0, fmt.Errorf("not a grant: %v %v", v, err)
	}
	return v[1], nil
}

// serverMicros reads the server's clock in microseconds.
func serverMicros(t *testing.T, ctx context.Context, raw rueidis.Client) int64 {
	t.Helper()
	v, err := raw.Do(ctx, raw.B().Time().Build()).AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME: %v %v", v, err)
	}
	s, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return s*1e6 + us
}
