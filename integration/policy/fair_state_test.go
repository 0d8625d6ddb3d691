package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// fairRaw runs the fair scripts raw for one lock name and policy.
type fairRaw struct {
	t      testing.TB
	raw    rueidis.Client
	policy string
	name   string
	fk     fwire.FairKeys
}

func newFairRaw(t testing.TB, raw rueidis.Client, policy, name string) *fairRaw {
	// The scripts take the policy as the state records it, with this
	// version's protocol (wire.PolicyRecord), as fairrw sends it.
	return &fairRaw{t: t, raw: raw, policy: fwire.PolicyRecord(policy, fwire.Protocol), name: name, fk: fwire.Fair(name)}
}

func (f *fairRaw) keys(owner string) []string {
	return []string{f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted, fwire.Fence(f.name), f.fk.Channel, f.name, fwire.OwnerMarker(f.name, owner)}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// acquire runs fair_acquire: owner asks for mode ("r" or "w") with lease
// and queue lease; wait "1" queues it when refused, further > 0 is a
// further hold, notify "1" marks a quorum round. It returns the reply.
func (f *fairRaw) acquire(owner, mode string, lease, qlease time.Duration, wait string, further int, notify string) []int64 {
	f.t.Helper()
	v, err := f.acquireErr(owner, mode, lease, qlease, wait, further, notify)
	if err != nil {
		f.t.Fatalf("acquire %s %s: %v", owner, mode, err)
	}
	return v
}

func (f *fairRaw) acquireErr(owner, mode string, lease, qlease time.Duration, wait string, further int, notify string) ([]int64, error) {
	a := itest.Args([]string{f.policy, mode, owner, ms(lease), ms(qlease)}, itest.Stamped(), []string{"publish", wait, strconv.Itoa(further), notify})
	res := f.raw.Do(context.Background(), f.raw.B().Eval().Script(lua.FairAcquire()).
		Numkeys(9).Key(f.keys(owner)...).Arg(a...).Build())
	if token, err := res.AsInt64(); err == nil { // the fast path's grant: its token alone
		return []int64{1, token}, nil
	}
	return res.AsIntSlice()
}

// unlock runs fair_unlock for owner: a release of mode (or, with abandon,
// a give-up), the owner keeping writes write holds (the longest wcover
// left) and reads read holds (the longest rcover left). It returns the
// result, the grantee and its token.
func (f *fairRaw) unlock(owner, mode string, lease time.Duration, abandon bool, writes int, wcover time.Duration, reads int, rcover time.Duration, mayRead bool) (int64, string, int64) {
	f.t.Helper()
	ab, mr := "0", "0"
	if abandon {
		ab = "1"
	}
	if mayRead {
		mr = "1"
	}
	a := itest.Args([]string{f.policy, mode, owner, ms(lease), ms(lease)}, itest.Stamped(), []string{"publish", "5000", ab, "5000",
		strconv.Itoa(writes), ms(wcover), strconv.Itoa(reads), ms(rcover), mr, "0"})
	keys := append(f.keys(owner), compat.UnlockLatch(f.name, fmt.Sprintf("req-%d", rand.Int64())))
	res, err := f.raw.Do(context.Background(), f.raw.B().Eval().Script(lua.FairUnlock()).
		Numkeys(10).Key(keys...).Arg(a...).Build()).ToArray()
	if err != nil || len(res) != 3 {
		f.t.Fatalf("unlock %s %s: %v %v", owner, mode, res, err)
	}
	n, _ := res[0].AsInt64()
	g, _ := res[1].ToString()
	tok, _ := res[2].AsInt64()
	return n, g, tok
}

// renew runs fair_renew for one hold of owner.
func (f *fairRaw) renew(owner, mode string, lease time.Duration) int64 {
	f.t.Helper()
	v, err := f.raw.Do(context.Background(), f.raw.B().Evalsha().Sha1(advScriptSHA(f.t, f.raw, "fair_renew")).Numkeys(2).
		Key(f.fk.State, f.fk.Readers).Arg(ms(lease), mode, owner).Build()).AsIntSlice()
	if err != nil || len(v) != 1 {
		f.t.Fatalf("renew %s %s: %v %v", owner, mode, v, err)
	}
	return v[0]
}

// forceUnlock runs fair_force_unlock for mode.
func (f *fairRaw) forceUnlock(mode string) int64 {
	f.t.Helper()
	a := itest.Args([]string{f.policy, mode, "", "1000", "1000"}, itest.Stamped(), []string{"publish"})
	n, err := f.raw.Do(context.Background(), f.raw.B().Eval().Script(lua.FairForceUnlock()).
		Numkeys(9).Key(f.keys("force")...).Arg(a...).Build()).AsInt64()
	if err != nil {
		f.t.Fatalf("force unlock %s: %v", mode, err)
	}
	return n
}

// advScriptSHA loads the standalone script name and returns its SHA1.
func advScriptSHA(t testing.TB, raw rueidis.Client, name string) string {
	t.Helper()
	sha, err := raw.Do(context.Background(), raw.B().ScriptLoad().Script(lua.Source(name)).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// fairInvariants is a read-only script that checks, at one instant on the
// server's clock, what the fair scripts promise of a lock's keys, and
// returns every broken promise as a line (none: an empty array):
//   - every key of the lock has an expiry;
//   - the state hash expires no earlier than its horizon, its live
//     writer's deadline, and every live queue entry's deadline;
//   - a live queue entry's owner is in the queue zset, which expires no
//     earlier than the entry;
//   - the readers, waiting and admitted zsets expire no earlier than
//     their live entries;
//   - while a writer holds, no other owner's read and (phase-fair) no
//     admitted reader is live.
//
// KEYS: S, R, Q, W, A.
const fairInvariants = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local S, R, Q, W, A = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local bad = {}
local function exp(k) return redis.call('pexpiretime', k) end
for _, k in ipairs(KEYS) do
  if exp(k) == -1 then bad[#bad + 1] = k .. ' has no expiry' end
end
local function covers(k, d, what)
  local e = exp(k)
  if e ~= -1 and e < d then
    bad[#bad + 1] = k .. ' expires at ' .. e .. ', before ' .. what .. ' ' .. d .. ' (now ' .. now .. ')'
  end
end
local h = redis.call('hgetall', S)
local f = {}
for i = 1, #h, 2 do f[h[i]] = h[i + 1] end
if f.horizon then covers(S, tonumber(f.horizon), 'its horizon') end
local writer = nil
if f.writer and tonumber(f.wdeadline) and tonumber(f.wdeadline) >= now then
  writer = f.writer
  covers(S, tonumber(f.wdeadline), 'the writer ' .. f.writer .. ' deadline')
end
for k, v in pairs(f) do
  local o = string.match(k, '^q:(.*)$')
  if o then
    local d = tonumber(string.match(v, '^(%d+):'))
    if d and d >= now then
      covers(S, d, 'the queue entry of ' .. o)
      covers(Q, d, 'the queue entry of ' .. o)
      if not redis.call('zscore', Q, o) then
        bad[#bad + 1] = 'live queue entry of ' .. o .. ' (until ' .. d .. ') is not in the queue'
      end
    end
  end
end
for _, k in ipairs({R, W, A}) do
  local top = redis.call('zrange', k, -1, -1, 'withscores')
  if top[2] and tonumber(top[2]) >= now then covers(k, tonumber(top[2]), 'its entry of ' .. top[1]) end
end
if writer then
  local live = redis.call('zrangebyscore', R, now, '+inf')
  for _, o in ipairs(live) do
    if o ~= writer then bad[#bad + 1] = 'reader ' .. o .. ' is live while ' .. writer .. ' writes' end
  end
  local adm = redis.call('zrangebyscore', A, now, '+inf')
  for _, o in ipairs(adm) do
    bad[#bad + 1] = 'admitted reader ' .. o .. ' is live while ' .. writer .. ' writes'
  end
end
return bad`

// check runs fairInvariants and fails the test with what it found.
func (f *fairRaw) check(after string) {
	f.t.Helper()
	bad, err := f.raw.Do(context.Background(), f.raw.B().Eval().Script(fairInvariants).Numkeys(5).
		Key(f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted).Build()).AsStrSlice()
	if err != nil {
		f.t.Fatalf("probe: %v", err)
	}
	if len(bad) > 0 {
		f.t.Fatalf("after %s:\n  %s\nstate %v", after, strings.Join(bad, "\n  "), f.hash())
	}
}

func (f *fairRaw) hash() map[string]string {
	m, _ := f.raw.Do(context.Background(), f.raw.B().Hgetall().Key(f.fk.State).Build()).AsStrMap()
	return m
}

func (f *fairRaw) expiry(key string) int64 {
	f.t.Helper()
	n, err := f.raw.Do(context.Background(), f.raw.B().Pexpiretime().Key(key).Build()).AsInt64()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fairRaw) field(name string) string {
	return f.hash()[name]
}

// fairScriptPolicies are the fair policies by the names their scripts take.
var fairScriptPolicies = []string{"writer-preferring", "phase-fair"}

// fuzzSeed is FAIRRW_ADVERSARY_SEED, or a fresh seed (logged).
func fuzzSeed(t *testing.T) uint64 {
	if s := os.Getenv("FAIRRW_ADVERSARY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FAIRRW_ADVERSARY_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// fuzzOwner is what a client would know of one owner's holds.
type fuzzOwner struct {
	id      string
	wUntil  time.Time // the write hold's local deadline (zero: none)
	rUntil  time.Time // the read hold's local deadline (zero: none)
	mayRead bool      // the owner ever asked for a read
}

func (o *fuzzOwner) writes(now time.Time) (int, time.Duration) {
	if o.wUntil.After(now) {
		return 1, o.wUntil.Sub(now)
	}
	return 0, 0
}

func (o *fuzzOwner) reads(now time.Time) (int, time.Duration) {
	if o.rUntil.After(now) {
		return 1, o.rUntil.Sub(now)
	}
	return 0, 0
}

// TestFairRandomSequences: random sequences of the fair scripts'
// calls as clients make them (locks, queued and quorum-round attempts,
// downgrades, releases, give-ups, renewals with leases longer and shorter
// than the holds', force unlocks), with leases and queue leases that
// differ per call, and pauses that let holds and entries run out; after
// every call the probe checks that no key can expire under a live hold,
// entry or horizon, that every key has an expiry, that no read overlaps a
// write, and the write tokens strictly increase. FAIRRW_ADVERSARY_SEED
// replays a run.
func TestFairRandomSequences(t *testing.T) {
	e := itest.NewWireEnv(t)
	seed := fuzzSeed(t)
	t.Logf("FAIRRW_ADVERSARY_SEED=%d", seed)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(p))))
			f := newFairRaw(t, e.Raw, p, "adv:fuzz:"+p)
			owners := make([]*fuzzOwner, 5)
			for i := range owners {
				owners[i] = &fuzzOwner{id: fmt.Sprintf("c%d:%d", i%2, i)}
			}
			leases := []time.Duration{40 * time.Millisecond, 120 * time.Millisecond, 300 * time.Millisecond}
			pick := func() time.Duration { return leases[rng.IntN(len(leases))] }
			var lastToken int64
			lastWtoken := ""
			var tokens, behalf, steps, gen int // coverage: fresh write tokens, grants on a waiter's behalf
			start := time.Now()
			// At least 4s, and on until the run has made enough grants to
			// judge (bounded).
			for step := 0; time.Since(start) < 4*time.Second || (time.Since(start) < 12*time.Second && (tokens < 10 || behalf == 0)); step++ {
				o := owners[rng.IntN(len(owners))]
				now := time.Now()
				var did string
				switch op := rng.IntN(14); op {
				case 0, 1, 2: // Lock(w) or TryLock(w) or a quorum round
					wait, notify := "1", "0"
					switch rng.IntN(3) {
					case 1:
						wait = "0"
					case 2:
						wait, notify = "0", "1"
					}
					l := pick()
					v := f.acquire(o.id, "w", l, pick(), wait, 0, notify)
					if v[0] == 1 {
						o.wUntil = now.Add(l)
					}
					did = fmt.Sprintf("acquire w %s lease %v wait %s notify %s -> %v", o.id, l, wait, notify, v)
				case 3, 4: // RLock or TryRLock
					wait := strconv.Itoa(rng.IntN(2))
					l := pick()
					o.mayRead = true
					v := f.acquire(o.id, "r", l, pick(), wait, 0, "0")
					if v[0] == 1 {
						o.rUntil = now.Add(l)
					}
					did = fmt.Sprintf("acquire r %s lease %v wait %s -> %v", o.id, l, wait, v)
				case 5: // a further hold: a downgrade's read or a reentrant write
					mode := "r"
					if rng.IntN(2) == 0 {
						mode = "w"
					}
					if mode == "r" {
						o.mayRead = true
					}
					l := pick()
					v := f.acquire(o.id, mode, l, pick(), "1", 2, "0")
					if v[0] == 1 {
						if mode == "w" {
							o.wUntil = later(o.wUntil, now.Add(l))
						} else {
							o.rUntil = later(o.rUntil, now.Add(l))
						}
					}
					did = fmt.Sprintf("further %s %s lease %v -> %v", mode, o.id, l, v)
				case 6, 7, 8: // release one mode, the one held if only one is
					mode := "w"
					if rng.IntN(2) == 0 {
						mode = "r"
					}
					if o.wUntil.After(now) != o.rUntil.After(now) {
						mode = map[bool]string{true: "w", false: "r"}[o.wUntil.After(now)]
					}
					if mode == "w" {
						o.wUntil = time.Time{}
					} else {
						o.rUntil = time.Time{}
					}
					ws, wc := o.writes(now)
					rs, rc := o.reads(now)
					n, g, tok := f.unlock(o.id, mode, pick(), false, ws, wc, rs, rc, o.mayRead)
					did = fmt.Sprintf("unlock %s %s keeping w%d r%d -> %d %q %d", mode, o.id, ws, rs, n, g, tok)
					if g != "" {
						behalf++
						for _, w := range owners {
							if w.id == g {
								w.wUntil = now.Add(10 * time.Millisecond) // a grant on its behalf: it must take it up
							}
						}
					}
				case 9: // give up an attempt
					mode := "w"
					if rng.IntN(2) == 0 {
						mode = "r"
					}
					ws, wc := o.writes(now)
					rs, rc := o.reads(now)
					n, g, tok := f.unlock(o.id, mode, pick(), true, ws, wc, rs, rc, o.mayRead || mode == "r")
					did = fmt.Sprintf("give up %s %s -> %d %q %d", mode, o.id, n, g, tok)
					// A given-up owner is never used again: its client goes on
					// as a new one.
					gen++
					*o = fuzzOwner{id: fmt.Sprintf("%s.%d", strings.SplitN(o.id, ".", 2)[0], gen)}
				case 10: // renew, with a lease that may be shorter than the hold's
					mode := "w"
					if rng.IntN(2) == 0 {
						mode = "r"
					}
					l := pick()
					if f.renew(o.id, mode, l) == 1 {
						if mode == "w" {
							o.wUntil = later(o.wUntil, now.Add(l))
						} else {
							o.rUntil = later(o.rUntil, now.Add(l))
						}
					}
					did = fmt.Sprintf("renew %s %s lease %v", mode, o.id, l)
				case 11:
					if rng.IntN(4) == 0 {
						mode := []string{"w", "r"}[rng.IntN(2)]
						did = fmt.Sprintf("force unlock %s -> %d", mode, f.forceUnlock(mode))
					} else {
						did = "nothing"
					}
				default:
					d := time.Duration(rng.IntN(60)) * time.Millisecond
					time.Sleep(d)
					did = fmt.Sprintf("sleep %v", d)
				}
				f.check(fmt.Sprintf("step %d: %s", step, did))
				if wt := f.field("wtoken"); wt != "" && wt != lastWtoken {
					tok, _ := strconv.ParseInt(wt, 10, 64)
					if tok <= lastToken {
						t.Fatalf("step %d (%s): write token %d after %d", step, did, tok, lastToken)
					}
					lastToken, lastWtoken = tok, wt
					tokens++
				}
				steps++
			}
			t.Logf("%d steps, %d write grants, %d of them on a waiter's behalf by a release", steps, tokens, behalf)
			if tokens < 10 || behalf == 0 {
				t.Fatalf("the run made %d write grants, %d on a waiter's behalf: too few to judge", tokens, behalf)
			}
		})
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestFairTurnedOnExpiredState: a reader-only lock's state hash
// lives as long as its first reader's lease (plus half of it); a reader
// that came later with a longer lease outlives it. A quorum round for the
// write, refused by that reader, records that it was turned away: on a
// state that had expired, this must not create the hash without an
// expiry, or it stays in Redis forever once the reader is gone.
func TestFairTurnedOnExpiredState(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			w := itest.Wire{T: t, Raw: e.Raw}
			// The second read must come while the first's state lives: one
			// the machine held up past the first lease found the state
			// gone and made its own (seen with two suites side by side).
			// Such a try is made again, three at most.
			var f *fairRaw
			for try := 1; ; try++ {
				f = newFairRaw(t, e.Raw, p, fmt.Sprintf("adv:turned:%s:%d", p, try))
				start := time.Now()
				if v := f.acquire("a:1", "r", 40*time.Millisecond, time.Second, "1", 0, "0"); v[0] != 1 {
					t.Fatalf("first read: %v", v)
				}
				if v := f.acquire("b:1", "r", 400*time.Millisecond, time.Second, "1", 0, "0"); v[0] != 1 {
					t.Fatalf("second read: %v", v)
				}
				if took := time.Since(start); took >= 40*time.Millisecond {
					if try < 3 {
						t.Logf("try %d: the two reads took %v, past the first one's lease: again", try, took)
						continue
					}
					t.Fatalf("the two reads took %v in each of %d tries, past the first one's 40ms lease", took, try)
				}
				break
			}
			// The hash expires by the first lease plus half of it; the
			// second reader holds on.
			time.Sleep(100 * time.Millisecond)
			w.WantMissing(f.fk.State)
			if v := f.acquire("c:1", "w", time.Second, time.Second, "0", 0, "1"); v[0] != 0 {
				t.Fatalf("a quorum round for the write beside a live reader: %v, want refused", v)
			}
			f.check("a quorum round refused on an expired state")
			if f.field("turned") != "1" {
				t.Fatalf("state %v, want the round recorded as turned away", f.hash())
			}
			// The reader's release tells the round; what is left of the lock
			// (the first reader's dead entry keeps the readers zset) goes
			// by its expiry.
			ch := itest.Listen(t, e.Raw, f.fk.Channel)
			if n, _, _ := f.unlock("b:1", "r", time.Second, false, 0, 0, 0, 0, true); n != 1 {
				t.Fatalf("the reader's release: %d", n)
			}
			ch.Want("r")
			f.check("the reader's release")
			last := max(f.expiry(f.fk.State), f.expiry(f.fk.Readers))
			time.Sleep(time.Until(time.UnixMilli(last)) + 20*time.Millisecond)
			w.WantMissing(f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted)
		})
	}
}

// TestFairReadersOutliveState: a new lock's single EXISTS rules
// out its other keys only when none of them exists. A reader-only lock's
// state hash expires while a later reader with a longer lease holds on:
// a writer then finds no state, but the readers zset, and must be refused
// (and queued, its entry covered), not granted beside the live reader.
func TestFairReadersOutliveState(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			w := itest.Wire{T: t, Raw: e.Raw}
			// The second read must land while the first (40 ms) holds,
			// or it finds the lock idle and the case is not reached: a
			// machine that took 30 ms or more for the two is tried again
			// on a new name, five times at most.
			var f *fairRaw
			for try := 1; ; try++ {
				f = newFairRaw(t, e.Raw, p, fmt.Sprintf("adv:outlive:%s:%d", p, try))
				start := time.Now()
				f.acquire("a:1", "r", 40*time.Millisecond, time.Second, "1", 0, "0")
				f.acquire("b:1", "r", time.Second, time.Second, "1", 0, "0")
				took := time.Since(start)
				if took < 30*time.Millisecond {
					break
				}
				if try == 5 {
					t.Fatalf("the two reads took %v or more in each of 5 tries: the second never landed within the first's 40 ms lease", took)
				}
				t.Logf("try %d: the two reads took %v: trying again on a new name", try, took)
			}
			time.Sleep(100 * time.Millisecond)
			w.WantMissing(f.fk.State)
			for _, wait := range []string{"0", "1"} {
				if v := f.acquire("c:1", "w", time.Second, 300*time.Millisecond, wait, 0, "0"); v[0] != 0 {
					t.Fatalf("a write (wait %s) beside a live reader whose state expired: %v, want refused", wait, v)
				}
				f.check("a write refused beside a live reader")
			}
			if n := itest.QueueLen(t, e.Raw, f.name); n != 1 {
				t.Fatalf("queue holds %d, want the refused writer", n)
			}
			// A new reader now waits for the queued writer, and the
			// reader's release grants it.
			if v := f.acquire("d:1", "r", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
				t.Fatalf("a new reader beside a queued writer: %v, want refused", v)
			}
			if _, g, tok := f.unlock("b:1", "r", time.Second, false, 0, 0, 0, 0, true); g != "c:1" || tok == 0 {
				t.Fatalf("the last reader's release granted %q (token %d), want c:1", g, tok)
			}
			f.check("the grant on the writer's behalf")
			if n, _, _ := f.unlock("c:1", "w", time.Second, false, 0, 0, 0, 0, false); n != 1 {
				t.Fatalf("the granted writer's release: %d", n)
			}
			f.check("the granted writer's release")
		})
	}
}

// TestFairGrantOnBehalfBounded: a waiter queued with a queue lease
// far shorter than the holder's lease and the state's horizon is granted
// the write on its behalf by the holder's release; the grant lasts no
// longer than the waiter's entry would have (the hash covering it all the
// while), and a writer that comes after it gets the lock then.
func TestFairGrantOnBehalfBounded(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			f := newFairRaw(t, e.Raw, p, "adv:behalf:"+p)
			if v := f.acquire("h:1", "w", 3*time.Second, time.Second, "1", 0, "0"); v[0] != 1 {
				t.Fatalf("holder: %v", v)
			}
			if v := f.acquire("ghost:1", "w", 10*time.Second, 150*time.Millisecond, "1", 0, "0"); v[0] != 0 {
				t.Fatalf("ghost: %v", v)
			}
			entry, _ := strconv.ParseInt(strings.SplitN(f.field("q:ghost:1"), ":", 2)[0], 10, 64)
			if _, g, _ := f.unlock("h:1", "w", 3*time.Second, false, 0, 0, 0, 0, false); g != "ghost:1" {
				t.Fatalf("the holder's release granted %q, want ghost:1", g)
			}
			f.check("the grant on the ghost's behalf")
			wd, _ := strconv.ParseInt(f.field("wdeadline"), 10, 64)
			if wd > entry {
				t.Fatalf("the grant lasts until %d, past the ghost's entry %d", wd, entry)
			}
			if v := f.acquire("x:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 0 {
				t.Fatalf("a writer beside the ghost's grant: %v, want refused", v)
			}
			time.Sleep(time.Until(time.UnixMilli(wd)) + 10*time.Millisecond)
			if v := f.acquire("x:1", "w", time.Second, time.Second, "0", 0, "0"); v[0] != 1 {
				t.Fatalf("a writer after the ghost's grant ran out: %v, want granted", v)
			}
			f.check("the next writer's grant")
			f.unlock("x:1", "w", time.Second, false, 0, 0, 0, 0, false)
		})
	}
}

// TestFairDowngradeRelease: a writer's release skips reading the
// readers it excluded, all but its own. A writer that took a read (a
// downgrade) and releases the write keeps the lock from the queued writer
// until its read ends; a read attempt of the writer whose reply was lost
// (the client counts no read, but may hold one) is removed by the release,
// which then grants the queued writer.
func TestFairDowngradeRelease(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			f := newFairRaw(t, e.Raw, p, "adv:downgrade:"+p)
			f.acquire("w:1", "w", time.Second, time.Second, "1", 0, "0")
			if v := f.acquire("w:1", "r", 2*time.Second, time.Second, "1", 1, "0"); v[0] != 1 {
				t.Fatalf("downgrade's read: %v", v)
			}
			if v := f.acquire("q:1", "w", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 0 {
				t.Fatalf("queued writer: %v", v)
			}
			if n, g, _ := f.unlock("w:1", "w", time.Second, false, 0, 0, 1, 2*time.Second, true); n != 1 || g != "" {
				t.Fatalf("the write's release, keeping the read: %d, granted %q; want 1 and no grant", n, g)
			}
			f.check("the write's release keeping the read")
			if _, g, _ := f.unlock("w:1", "r", time.Second, false, 0, 0, 0, 0, true); g != "q:1" {
				t.Fatalf("the read's release granted %q, want q:1", g)
			}
			f.check("the read's release")

			// q:1 writes; it asks for a read whose reply is lost (granted
			// in Redis, unknown to the client), then releases the write
			// counting no read: the read must go with it.
			if v := f.acquire("q:1", "w", time.Second, time.Second, "1", 0, "0"); v[0] != 1 {
				t.Fatalf("the grant taken up: %v", v)
			}
			f.acquire("q:1", "r", 2*time.Second, time.Second, "1", 1, "0")
			if v := f.acquire("z:1", "w", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 0 {
				t.Fatalf("queued writer: %v", v)
			}
			if n, g, _ := f.unlock("q:1", "w", time.Second, false, 0, 0, 0, 0, true); n != 1 || g != "z:1" {
				t.Fatalf("the write's release counting no read: %d, granted %q; want 1 and z:1", n, g)
			}
			f.check("the write's release counting no read")
			if s, err := e.Raw.Do(context.Background(), e.Raw.B().Zscore().Key(f.fk.Readers).Member("q:1").Build()).AsFloat64(); !rueidis.IsRedisNil(err) {
				t.Fatalf("the unseen read is left in the readers zset (%v, %v)", s, err)
			}
			f.unlock("z:1", "w", time.Second, false, 0, 0, 0, 0, false)
			f.check("the last release")
		})
	}
}

// TestFairPhaseFairAdmitted: under phase-fair, readers waiting
// when a write ends are admitted ahead of the next writer; the next
// writer's release (no reader waiting then) skips the admitted set, which
// the grant before it found empty of live entries. The queued writer is
// granted only once every admitted reader has entered and left.
func TestFairPhaseFairAdmitted(t *testing.T) {
	e := itest.NewWireEnv(t)
	f := newFairRaw(t, e.Raw, "phase-fair", "adv:admitted")
	f.acquire("w:1", "w", time.Second, time.Second, "1", 0, "0")
	for _, o := range []string{"r:1", "r:2"} {
		if v := f.acquire(o, "r", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 0 {
			t.Fatalf("reader %s beside the writer: %v", o, v)
		}
	}
	if v := f.acquire("w:2", "w", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 0 {
		t.Fatalf("second writer: %v", v)
	}
	if _, g, _ := f.unlock("w:1", "w", time.Second, false, 0, 0, 0, 0, false); g != "" {
		t.Fatalf("the write's release granted %q past the waiting readers", g)
	}
	f.check("the write's release admitting readers")
	if v := f.acquire("r:1", "r", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 1 {
		t.Fatalf("admitted reader r:1: %v", v)
	}
	if _, g, _ := f.unlock("r:1", "r", time.Second, false, 0, 0, 0, 0, true); g != "" {
		t.Fatalf("r:1's release granted %q while r:2 is admitted", g)
	}
	if v := f.acquire("r:2", "r", time.Second, 2*time.Second, "1", 0, "0"); v[0] != 1 {
		t.Fatalf("admitted reader r:2: %v", v)
	}
	if _, g, _ := f.unlock("r:2", "r", time.Second, false, 0, 0, 0, 0, true); g != "w:2" {
		t.Fatalf("the last admitted reader's release granted %q, want w:2", g)
	}
	f.check("the grant to w:2")
	if v := f.acquire("w:2", "w", time.Second, time.Second, "1", 0, "0"); v[0] != 1 {
		t.Fatalf("w:2 takes up its grant: %v", v)
	}
	if v := f.acquire("r:3", "r", time.Second, 2*time.Second, "0", 0, "0"); v[0] != 0 {
		t.Fatalf("a reader during w:2's write: %v", v)
	}
	if n, g, _ := f.unlock("w:2", "w", time.Second, false, 0, 0, 0, 0, false); n != 1 || g != "" {
		t.Fatalf("w:2's release: %d %q", n, g)
	}
	f.check("w:2's release")
	e.W.WantMissing(f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted)
}

// TestFairTokenFence: write tokens strictly increase when the last
// token's key expired just before a grant (the clock has passed it), when
// it holds something that is no number (the clock's token, written over),
// and a key of another type at it refuses the write before anything is
// taken.
func TestFairTokenFence(t *testing.T) {
	e := itest.NewWireEnv(t)
	for _, p := range fairScriptPolicies {
		t.Run(p, func(t *testing.T) {
			f := newFairRaw(t, e.Raw, p, "adv:fence:"+p)
			fence := fwire.Fence(f.name)
			ctx := context.Background()
			v := f.acquire("a:1", "w", time.Second, time.Second, "1", 0, "0")
			first := v[1]
			f.unlock("a:1", "w", time.Second, false, 0, 0, 0, 0, false)
			e.Raw.Do(ctx, e.Raw.B().Del().Key(fence).Build())
			v = f.acquire("a:2", "w", time.Second, time.Second, "1", 0, "0")
			if v[0] != 1 || v[1] <= first {
				t.Fatalf("token %v after the fence key expired, last %d", v, first)
			}
			second := v[1]
			// The grant on behalf after a release mints from the holder's token.
			f.acquire("a:3", "w", time.Second, time.Second, "1", 0, "0")
			e.Raw.Do(ctx, e.Raw.B().Set().Key(fence).Value("garbage").Build())
			_, g, tok := f.unlock("a:2", "w", time.Second, false, 0, 0, 0, 0, false)
			if g != "a:3" || tok <= second {
				t.Fatalf("grant %q token %d after %d", g, tok, second)
			}
			f.unlock("a:3", "w", time.Second, false, 0, 0, 0, 0, false)
			e.Raw.Do(ctx, e.Raw.B().Set().Key(fence).Value("garbage").Build())
			v = f.acquire("a:4", "w", time.Second, time.Second, "1", 0, "0")
			if v[0] != 1 || v[1] <= tok {
				t.Fatalf("token %v over a fence key holding no number, last %d", v, tok)
			}
			if got, _ := (itest.Wire{T: t, Raw: e.Raw}).Get(fence); got != strconv.FormatInt(v[1], 10) {
				t.Fatalf("fence key %q, want the token %d", got, v[1])
			}
			f.unlock("a:4", "w", time.Second, false, 0, 0, 0, 0, false)

			e.Raw.Do(ctx, e.Raw.B().Del().Key(fence).Build())
			e.Raw.Do(ctx, e.Raw.B().Rpush().Key(fence).Element("x").Build())
			if _, err := f.acquireErr("a:5", "w", time.Second, time.Second, "1", 0, "0"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("a write over a list at the fence key: %v, want WRONGTYPE", err)
			}
			(itest.Wire{T: t, Raw: e.Raw}).WantMissing(f.fk.State, f.fk.Readers, f.fk.Queue, f.fk.Waiting, f.fk.Admitted)
			e.Raw.Do(ctx, e.Raw.B().Del().Key(fence).Build())
		})
	}
}
