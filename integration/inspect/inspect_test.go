package inspect

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestInspect walks one lock per policy through the states Inspect
// describes: free, one writer, reentrant and downgraded holds, queued
// writers and waiting readers, several readers, free again.
func TestInspect(t *testing.T) {
	r := redistest.Start(t)
	raw := r.Client(t, itest.NoCache)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			ctx := itest.TestCtx(t)
			name := "inspect:walk:" + p.String()
			fk := fwire.Fair(name)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			fair := p.String() != "redisson"

			if info := itest.Inspect(t, c, name); info.Policy != "" || len(info.Holders)+len(info.WaitingWriters)+len(info.WaitingReaders) != 0 {
				t.Fatalf("free lock: %+v", info)
			}

			w := itest.MustLease(t)(c.RWMutex(name).Lock(ctx))
			info := itest.Inspect(t, c, name)
			if info.Policy != p.String() {
				t.Fatalf("Policy = %q, want %q", info.Policy, p.String())
			}
			itest.WantList(t, "holders", itest.Holders(t, info, itest.InspectLease), []string{"write " + w.Owner() + " x1"})
			if info.Token == 0 || info.Token != w.Token() {
				t.Fatalf("Token = %d, the lease's is %d", info.Token, w.Token())
			}
			if info.Time.IsZero() || time.Since(info.Time).Abs() > time.Minute {
				t.Fatalf("Time = %v", info.Time)
			}

			// A reentrant write and a downgrade read of the same owner.
			w2 := itest.MustLease(t)(w.Lock(ctx))
			wr := itest.MustLease(t)(w.RLock(ctx))
			most := itest.InspectLease
			if !fair {
				most = 2*itest.InspectLease + hidden.LeaseMargin // Redisson's reentrant write adds its lease (and margin) to the hash's
			}
			itest.WantList(t, "holders after a reentrant write and a downgrade", itest.Holders(t, itest.Inspect(t, c, name), most),
				[]string{"write " + w.Owner() + " x2", "read " + w.Owner() + " " + itest.ReadHolds(p, 1)})

			// Two writers queue, in order, from two Clients; a reader waits.
			cw1 := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			cw2 := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			cr := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			for i, cw := range []*fairrw.Client{cw1, cw2} {
				itest.StartWaiter(t, cw.RWMutex(name).Lock)
				if fair {
					itest.Until(t, "writer queued", func() bool { return itest.Zcard(t, raw, fk.Queue) == int64(i+1) })
				}
			}
			itest.StartWaiter(t, cr.RWMutex(name).RLock)
			if p.String() == "phase-fair" {
				itest.Until(t, "reader recorded", func() bool { return itest.Zcard(t, raw, fk.Waiting) == 1 })
			} else {
				time.Sleep(200 * time.Millisecond) // the waiters' first attempts, which record nothing
			}
			info = itest.Inspect(t, c, name)
			switch p.String() {
			case "redisson":
				itest.WantList(t, "waiting writers", itest.Waiters(t, info.WaitingWriters), nil)
				itest.WantList(t, "waiting readers", itest.Waiters(t, info.WaitingReaders), nil)
			case "writer-preferring":
				itest.WantList(t, "waiting writers", itest.Waiters(t, info.WaitingWriters), []string{hidden.ClientID(cw1), hidden.ClientID(cw2)})
				itest.WantList(t, "waiting readers", itest.Waiters(t, info.WaitingReaders), nil)
			case "phase-fair":
				itest.WantList(t, "waiting writers", itest.Waiters(t, info.WaitingWriters), []string{hidden.ClientID(cw1), hidden.ClientID(cw2)})
				itest.WantList(t, "waiting readers", itest.Waiters(t, info.WaitingReaders), []string{hidden.ClientID(cr)})
			}
			for _, q := range info.WaitingWriters {
				if q.Lease != itest.InspectLease || q.Admitted {
					t.Fatalf("waiting writer %+v: want the lease %v it asked for", q, itest.InspectLease)
				}
			}
			if info.Token != w.Token() && fair { // the write's token lives with the write
				t.Fatalf("Token = %d while the write is held, want %d", info.Token, w.Token())
			}
			for _, cw := range []*fairrw.Client{cw1, cw2, cr} {
				_ = cw.Close() // wakes its waiter with ErrClosed
			}
			for _, l := range []*fairrw.Lease{wr, w2, w} {
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}

			// Several readers, one of them with a reentrant read.
			r1 := itest.MustLease(t)(c.RWMutex(name).RLock(ctx))
			r1b := itest.MustLease(t)(r1.RLock(ctx))
			r2 := itest.MustLease(t)(c.RWMutex(name).RLock(ctx, fairrw.WithLease(10*time.Second)))
			info = itest.Inspect(t, c, name)
			want := []string{"read " + r1.Owner() + " " + itest.ReadHolds(p, 2), "read " + r2.Owner() + " " + itest.ReadHolds(p, 1)}
			slices.Sort(want)
			itest.WantList(t, "readers", itest.Holders(t, info, itest.InspectLease), want)
			for _, h := range info.Holders {
				if h.Owner == r2.Owner() && h.Remaining > 10*time.Second+hidden.LeaseMargin {
					t.Fatalf("the 10 s read shows %v left", h.Remaining)
				}
			}
			for _, l := range []*fairrw.Lease{r1b, r1, r2} {
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			itest.Until(t, "the lock is free", func() bool {
				info := itest.Inspect(t, c, name)
				return info.Policy == "" && len(info.Holders)+len(info.WaitingWriters)+len(info.WaitingReaders) == 0
			})
		})
	}
}

// TestInspectMutex: a Mutex's holds (reentrant), as a Client of every
// policy reads them.
func TestInspectMutex(t *testing.T) {
	r := redistest.Start(t)
	ctx := itest.TestCtx(t)
	name := "inspect:mutex"
	c := itest.NewClient(t, r, itest.Transports[0])
	m := c.Mutex(name)
	l := itest.MustLease(t)(m.Lock(ctx))
	l2 := itest.MustLease(t)(l.Lock(ctx))
	info, err := c.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Policy != hidden.PolicyMutex || info.Token != l.Token() || info.Token == 0 {
		t.Fatalf("Policy %q Token %d, want %q and the lease's %d", info.Policy, info.Token, hidden.PolicyMutex, l.Token())
	}
	itest.WantList(t, "holders", itest.Holders(t, info, itest.InspectLease), []string{"write " + l.Owner() + " x2"})
	for _, p := range itest.Policies {
		other := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
		info, err := other.Inspect(ctx, name)
		if err != nil || info.Policy != hidden.PolicyMutex || len(info.Holders) != 1 {
			t.Fatalf("%s client: %+v, %v", p, info, err)
		}
	}
	// A second owner waits: an RLock records no waiter.
	itest.StartWaiter(t, c.Mutex(name).Lock)
	time.Sleep(100 * time.Millisecond)
	if info := itest.Inspect(t, c, name); len(info.WaitingWriters)+len(info.WaitingReaders) != 0 || len(info.Holders) != 1 {
		t.Fatalf("with a waiter: %+v", info)
	}
	_ = l2.Unlock(ctx)
	_ = l.Unlock(ctx)
}

// TestInspectOtherPolicy: a name is described by the keys found, whatever
// the inspecting Client's policy: Java's formats written by hand, a
// Redisson-policy client's reads, a fair policy's write.
func TestInspectOtherPolicy(t *testing.T) {
	r := redistest.Start(t)
	raw := r.Client(t, itest.NoCache)
	w := itest.Wire{T: t, Raw: raw}
	ctx := itest.TestCtx(t)
	wp := itest.NewClient(t, r, itest.Transports[0]) // writer-preferring

	w.JavaHolds("java:rw", 20*time.Second, compat.ModeField, compat.ModeWrite, "java-uuid:7"+compat.WriteSuffix, "1")
	info := itest.Inspect(t, wp, "java:rw")
	if info.Policy != "redisson" {
		t.Fatalf("Java write: Policy %q", info.Policy)
	}
	itest.WantList(t, "Java write", itest.Holders(t, info, 20*time.Second), []string{"write java-uuid:7 x1"})

	w.JavaHolds("java:lock", 20*time.Second, "java-uuid:8", "3")
	info = itest.Inspect(t, wp, "java:lock")
	if info.Policy != hidden.PolicyMutex {
		t.Fatalf("Java RLock: Policy %q", info.Policy)
	}
	itest.WantList(t, "Java RLock", itest.Holders(t, info, 20*time.Second), []string{"write java-uuid:8 x3"})

	// Java reads: each hold has its lease key. j:1 has two holds, one whose
	// key expired; j:2 a shorter lease; j:3 none left (the hash keeps it).
	w.JavaHolds("java:reads", 30*time.Second, compat.ModeField, compat.ModeRead, "j:1", "2", "j:2", "1", "j:3", "1")
	for key, ttl := range map[string]time.Duration{compat.LeaseKey("java:reads", "j:1", 1): 25 * time.Second, compat.LeaseKey("java:reads", "j:2", 1): 8 * time.Second} {
		if err := raw.Do(ctx, raw.B().Set().Key(key).Value("1").Px(ttl).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	info = itest.Inspect(t, wp, "java:reads")
	itest.WantList(t, "Java reads", itest.Holders(t, info, 30*time.Second), []string{"read j:1 x2", "read j:2 x1", "read j:3 x1"})
	// Each read shows its longest lease key; j:3 the hash's time to live.
	within := map[string][2]time.Duration{"j:1": {20 * time.Second, 25 * time.Second}, "j:2": {5 * time.Second, 8 * time.Second}, "j:3": {25 * time.Second, 30 * time.Second}}
	for _, h := range info.Holders {
		lo, hi := within[h.Owner][0], within[h.Owner][1]
		if h.Remaining < lo || h.Remaining > hi {
			t.Fatalf("Java read %s: %v left, want [%v, %v]", h.Owner, h.Remaining, lo, hi)
		}
	}

	// A fairrw Redisson client's read, seen from a writer-preferring one.
	rc := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(fairrw.Redisson()))
	rl := itest.MustLease(t)(rc.RWMutex("cross").RLock(ctx, fairrw.WithLease(12*time.Second)))
	info = itest.Inspect(t, wp, "cross")
	if info.Policy != "redisson" {
		t.Fatalf("Redisson read: Policy %q", info.Policy)
	}
	itest.WantList(t, "Redisson read", itest.Holders(t, info, 12*time.Second), []string{"read " + rl.Owner() + " x1"})
	_ = rl.Unlock(ctx)

	// A phase-fair write, seen from a Redisson client.
	pf := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(fairrw.PhaseFair()))
	pw := itest.MustLease(t)(pf.RWMutex("cross:pf").Lock(ctx))
	info = itest.Inspect(t, rc, "cross:pf")
	if info.Policy != "phase-fair" || info.Token != pw.Token() {
		t.Fatalf("phase-fair write from a Redisson client: %+v (token %d)", info, pw.Token())
	}
	_ = pw.Unlock(ctx)
}

// TestInspectExpired: entries whose deadline passed but that Redis still
// keeps are not reported; a fair lock whose state expired under live
// readers is PolicyFair.
func TestInspectExpired(t *testing.T) {
	r := redistest.Start(t)
	raw := r.Client(t, itest.NoCache)
	for _, p := range itest.FairPolicies {
		t.Run(p.String(), func(t *testing.T) {
			ctx := itest.TestCtx(t)
			name := "inspect:expired:" + p.String()
			fk := fwire.Fair(name)
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			short := itest.MustLease(t)(c.RWMutex(name).RLock(ctx, fairrw.WithLease(200*time.Millisecond)))
			long := itest.MustLease(t)(c.RWMutex(name).RLock(ctx))
			time.Sleep(350 * time.Millisecond) // the state lives the lease, its margin and half of both
			if n := itest.Zcard(t, raw, fk.Readers); n != 2 {
				t.Fatalf("the readers zset holds %d, want the dead reader still there", n)
			}
			info := itest.Inspect(t, c, name)
			itest.WantList(t, "live readers", itest.Holders(t, info, itest.InspectLease), []string{"read " + long.Owner() + " x0"})
			if info.Policy != hidden.PolicyFair {
				t.Fatalf("Policy = %q once the state expired (the first reader's lease), want %q", info.Policy, hidden.PolicyFair)
			}

			// A queue entry whose deadline passed, and one without its entry field.
			past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
			for _, cmd := range []rueidis.Completed{
				raw.B().Hset().Key(fk.State).FieldValue().FieldValue("policy", fwire.PolicyRecord(p.String(), fwire.Protocol)).FieldValue("q:dead:1", past+":30000").Build(),
				raw.B().Zadd().Key(fk.Queue).ScoreMember().ScoreMember(1, "dead:1").ScoreMember(2, "nofield:1").Build(),
			} {
				if err := raw.Do(ctx, cmd).Error(); err != nil {
					t.Fatal(err)
				}
			}
			info = itest.Inspect(t, c, name)
			if info.Policy != p.String() || len(info.WaitingWriters) != 0 {
				t.Fatalf("dead queue entries: Policy %q, waiting writers %+v", info.Policy, info.WaitingWriters)
			}
			if err := raw.Do(ctx, raw.B().Del().Key(fk.State, fk.Queue).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			_ = short.Unlock(ctx) // already lost
			if err := long.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestInspectNames: names that look like other locks' keys, invalid names
// (nothing sent), a key of another kind under the name, handles and a
// closed Client.
func TestInspectNames(t *testing.T) {
	e := itest.NewBadEnv(t)
	ctx := itest.TestCtx(t)
	rc := e.Client(t, fairrw.Redisson())
	wp := e.Client(t, fairrw.WriterPreferring())
	a := itest.MustLease(t)(rc.RWMutex("look").RLock(ctx))
	b := itest.MustLease(t)(wp.RWMutex("{look}").Lock(ctx))
	defer func() { _ = a.Unlock(ctx); _ = b.Unlock(ctx) }()

	if info := itest.Inspect(t, wp, "look"); info.Policy != "redisson" || len(info.Holders) != 1 || info.Holders[0].Owner != a.Owner() {
		t.Fatalf(`"look": %+v`, info)
	}
	if info := itest.Inspect(t, rc, "{look}"); info.Policy != "writer-preferring" || len(info.Holders) != 1 || info.Holders[0].Owner != b.Owner() {
		t.Fatalf(`"{look}": %+v`, info)
	}
	for _, name := range []string{compat.Channel("look"), compat.SuffixName("look", "x"), "look:readers", "{look}:readers"} {
		if info := itest.Inspect(t, wp, name); info.Policy != "" || len(info.Holders) != 0 {
			t.Fatalf("%q: %+v", name, info)
		}
	}
	// A read's lease key is a string: a key of another kind under the name.
	if _, err := wp.Inspect(ctx, compat.LeaseKey("look", a.Owner(), 1)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
		t.Fatalf("Inspect of a lease key: %v, want ErrPolicyMismatch", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := wp.Inspect(cancelled, "look"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Inspect with a cancelled ctx: %v, want context.Canceled", err)
	}
	closed := e.Client(t, fairrw.PhaseFair())
	_ = closed.Close()
	before, stats := e.Snapshot(t), e.Stats(t)
	for _, name := range []string{"", strings.Repeat("n", hidden.MaxNameLength+1), "a{b", "x}y", "{}", "lock:{",
		fwire.Fair("look").State, fwire.Fence("look"), fwire.OwnerMarker("look", "x")} {
		if _, err := wp.Inspect(ctx, name); !errors.Is(err, fairrw.ErrInvalidName) {
			t.Fatalf("Inspect(%.40q): %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := closed.Inspect(ctx, "look"); !errors.Is(err, fairrw.ErrClosed) {
		t.Fatalf("Inspect after Close: %v, want ErrClosed", err)
	}
	e.WantNothingSent(t, "invalid names and a closed Client", stats, false)
	itest.WantSame(t, "invalid names", before, e.Snapshot(t))
}

// TestInspectUnderContention: while owners of one lock take and release
// reads and writes as fast as they can, every Inspect shows a state the
// policy allows: at most one writer, and no reader beside it but itself.
func TestInspectUnderContention(t *testing.T) {
	r := redistest.Start(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			name := "inspect:hammer:" + p.String()
			c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(p))
			ctx, cancel := context.WithTimeout(itest.TestCtx(t), time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := c.RWMutex(name)
					for ctx.Err() == nil {
						acquire := m.RLock
						if i%2 == 0 {
							acquire = m.Lock
						}
						if l, err := acquire(ctx); err == nil {
							_ = l.Unlock(context.Background())
						}
					}
				}()
			}
			seen := 0
			for ctx.Err() == nil {
				info, err := c.Inspect(itest.TestCtx(t), name)
				if err != nil {
					t.Fatal(err)
				}
				var writer string
				for _, h := range info.Holders {
					if h.Mode == fairrw.Write {
						if writer != "" {
							t.Fatalf("two writers: %+v", info.Holders)
						}
						writer = h.Owner
					} else if writer != "" && h.Owner != writer {
						t.Fatalf("a reader beside the writer: %+v", info.Holders)
					}
				}
				seen += len(info.Holders)
			}
			wg.Wait()
			if seen == 0 {
				t.Fatal("Inspect never saw a holder")
			}
		})
	}
}

// TestInspectCluster: names spread over the shards of a cluster, every
// policy and the Mutex, with a Redisson read (its lease keys are read in a
// second call, in the name's slot).
func TestInspectCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	ctx := itest.TestCtx(t)
	for _, p := range itest.Policies {
		c := itest.NewClusterClient(t, cl, itest.Transports[0], fairrw.WithPolicy(p))
		for _, name := range itest.ClusterNames(3) {
			name := name + ":" + p.String()
			w := itest.MustLease(t)(c.RWMutex(name).Lock(ctx))
			rd := itest.MustLease(t)(w.RLock(ctx))
			info := itest.Inspect(t, c, name)
			if info.Policy != p.String() || info.Token != w.Token() {
				t.Fatalf("%s: Policy %q Token %d, want %q %d", name, info.Policy, info.Token, p, w.Token())
			}
			itest.WantList(t, name, itest.Holders(t, info, itest.InspectLease), []string{"write " + w.Owner() + " x1", "read " + w.Owner() + " " + itest.ReadHolds(p, 1)})
			_ = rd.Unlock(ctx)
			_ = w.Unlock(ctx)
		}
	}
	c := itest.NewClusterClient(t, cl, itest.Transports[0])
	for _, name := range itest.ClusterNames(3) {
		l := itest.MustLease(t)(c.Mutex(name + ":mutex").Lock(ctx))
		info, err := c.Inspect(ctx, name+":mutex")
		if err != nil || info.Policy != hidden.PolicyMutex || len(info.Holders) != 1 || info.Holders[0].Owner != l.Owner() {
			t.Fatalf("%s mutex: %+v, %v", name, info, err)
		}
		_ = l.Unlock(ctx)
	}
}

// TestInspectRemainingIsAsOfItsTime: a holder's Remaining counts from the
// Time the same snapshot returns, so Time + Remaining is the instant Redis
// expires the hold, to the millisecond (PEXPIRETIME), on every key kind
// that carries a hold's TTL: Redisson's write hash, the Mutex's hash, and
// the lease key of a Redisson read. (Redis 7.0 counts a PTTL in a script
// from when it runs, so a script held up on a busy machine once
// understated every Remaining by the hold-up.)
func TestInspectRemainingIsAsOfItsTime(t *testing.T) {
	r := redistest.Start(t)
	raw := r.Client(t, itest.NoCache)
	ctx := itest.TestCtx(t)
	c := itest.NewClient(t, r, itest.Transports[0], fairrw.WithPolicy(fairrw.Redisson()))
	expiry := func(key string) time.Time {
		t.Helper()
		ms, err := raw.Do(ctx, raw.B().Arbitrary("PEXPIRETIME").Keys(key).Build()).AsInt64()
		if err != nil || ms <= 0 {
			t.Fatalf("PEXPIRETIME %s = %d, %v", key, ms, err)
		}
		return time.UnixMilli(ms)
	}
	check := func(name, key string, l *fairrw.Lease) {
		t.Helper()
		info := itest.Inspect(t, c, name)
		want := expiry(key)
		for _, h := range info.Holders {
			if h.Owner == l.Owner() {
				if got := info.Time.Add(h.Remaining); !got.Equal(want) {
					t.Fatalf("%s: Time + Remaining = %v, Redis expires the hold at %v", name, got, want)
				}
				return
			}
		}
		t.Fatalf("%s: no holder %s in %+v", name, l.Owner(), info.Holders)
	}
	w := itest.MustLease(t)(c.RWMutex("inspect:asof:write").Lock(ctx))
	check("inspect:asof:write", "inspect:asof:write", w)
	m := itest.MustLease(t)(c.Mutex("inspect:asof:mutex").Lock(ctx))
	check("inspect:asof:mutex", "inspect:asof:mutex", m)
	rd := itest.MustLease(t)(c.RWMutex("inspect:asof:read").RLock(ctx, fairrw.WithLease(7*time.Second)))
	check("inspect:asof:read", "{inspect:asof:read}:"+rd.Owner()+":rwlock_timeout:1", rd)
	for _, l := range []*fairrw.Lease{w, m, rd} {
		itest.MustUnlock(t, l)
	}
}
