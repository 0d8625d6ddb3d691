package integration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// The TestBadInput* tests feed every kind of bad input to a Client on a
// redis-server of their own, and check two things each time: a clear error
// (errors.Is with the right sentinel), and Redis unchanged: the whole
// keyspace (every key's type, DUMP of its value, and whether it has a TTL;
// not the TTL's countdown) is the same before and after, and where nothing
// may be sent, no command but the test's own inspection ran.

// keyState is what a snapshot records of one key.
type keyState struct {
	typ  string
	dump string // DUMP: the value, as Redis serializes it
	ttl  bool   // whether the key has a TTL (not how much is left)
}

type keyspace map[string]keyState

// badEnv is a private redis-server (so that FLUSHALL and INFO are the
// test's own) and a raw client to inspect it.
type badEnv struct {
	r   *redistest.Redis
	raw rueidis.Client
}

func newBadEnv(t *testing.T) *badEnv {
	r := redistest.StartProcess(t)
	return &badEnv{r: r, raw: r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })}
}

func (e *badEnv) do(t testing.TB, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	res := e.raw.Do(testCtx(t), cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("%v: %v", cmd.Commands(), err)
	}
	return res
}

// flush empties the server: each subtest starts from nothing.
func (e *badEnv) flush(t testing.TB) {
	t.Helper()
	e.do(t, e.raw.B().Flushall().Build())
}

// client returns a Client with policy p whose latches outlive any subtest
// (so that none expires between two snapshots).
func (e *badEnv) client(t testing.TB, p fairrw.Policy, opts ...fairrw.Option) *fairrw.Client {
	return newClient(t, e.r, transports[0], append([]fairrw.Option{fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(time.Minute)}, opts...)...)
}

// snapshot reads the whole keyspace with SCAN, TYPE, DUMP and PTTL.
func (e *badEnv) snapshot(t testing.TB) keyspace {
	t.Helper()
	ks := keyspace{}
	cursor := uint64(0)
	for {
		entry, err := e.raw.Do(testCtx(t), e.raw.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		for _, k := range entry.Elements {
			typ, err := e.raw.Do(testCtx(t), e.raw.B().Type().Key(k).Build()).ToString()
			if err != nil {
				t.Fatalf("TYPE %q: %v", k, err)
			}
			dump, err := e.raw.Do(testCtx(t), e.raw.B().Dump().Key(k).Build()).ToString()
			if rueidis.IsRedisNil(err) {
				continue // expired since SCAN
			}
			if err != nil {
				t.Fatalf("DUMP %q: %v", k, err)
			}
			pttl, err := e.raw.Do(testCtx(t), e.raw.B().Pttl().Key(k).Build()).AsInt64()
			if err != nil {
				t.Fatalf("PTTL %q: %v", k, err)
			}
			if pttl == -2 {
				continue
			}
			ks[k] = keyState{typ: typ, dump: dump, ttl: pttl >= 0}
		}
		if entry.Cursor == 0 {
			return ks
		}
		cursor = entry.Cursor
	}
}

// without returns ks without the keys that start with one of prefixes.
func (ks keyspace) without(prefixes ...string) keyspace {
	out := keyspace{}
	for k, v := range ks {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}

// withoutMarkers returns ks without the owner markers that have a TTL: an
// acquire that ends with an error gives its owner up, and the marker it
// leaves (fwire.OwnerMarker) expires on its own (the give-up's unlock
// latch is deleted at once: compare e.settled). A marker without a TTL
// stays in, so that a comparison reports it.
func (ks keyspace) withoutMarkers() keyspace {
	out := keyspace{}
	for k, v := range ks {
		if !strings.HasPrefix(k, fwire.OwnerMarkerPrefix+":") || !v.ttl {
			out[k] = v
		}
	}
	return out
}

// wantSame fails when after differs from before.
func wantSame(t testing.TB, what string, before, after keyspace) {
	t.Helper()
	var diffs []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%q (%s) was deleted", k, b.typ))
		case a.typ != b.typ:
			diffs = append(diffs, fmt.Sprintf("%q changed type %s -> %s", k, b.typ, a.typ))
		case a.dump != b.dump:
			diffs = append(diffs, fmt.Sprintf("%q (%s) changed value", k, b.typ))
		case a.ttl != b.ttl:
			diffs = append(diffs, fmt.Sprintf("%q (%s) TTL present %v -> %v", k, b.typ, b.ttl, a.ttl))
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q (%s) was created", k, a.typ))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%s changed Redis:\n\t%s", what, strings.Join(diffs, "\n\t"))
	}
}

// settled waits until no unlock latch is left (the janitor deletes them
// right after their unlock answered) and returns the keyspace then.
func (e *badEnv) settled(t testing.TB) keyspace {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ks := e.snapshot(t)
		left := 0
		for k := range ks {
			if strings.HasPrefix(k, compat.UnlockLatchPrefix+":") {
				left++
			}
		}
		if left == 0 {
			return ks
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d unlock latches left", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// inspection are the commands the test itself sends, and what a
// connection sends on its own (handshake, health checks): anything else
// counts as sent by fairrw.
var inspection = map[string]bool{
	"scan": true, "type": true, "dump": true, "pttl": true, "info": true, "ping": true, "hello": true,
	"flushall": true, "select": true, "readonly": true, "cluster|slots": true, "cluster|shards": true,
}

type serverStats struct {
	calls       map[string]int64 // INFO commandstats
	connections int64            // total_connections_received
}

func (e *badEnv) stats(t testing.TB) serverStats {
	t.Helper()
	info, err := e.raw.Do(testCtx(t), e.raw.B().Info().Section("commandstats").Section("stats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	s := serverStats{calls: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			s.connections, _ = strconv.ParseInt(v, 10, 64)
		}
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				s.calls[name], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return s
}

// wantNothingSent fails when a command other than the test's inspection
// ran since before, or (newConns false) a connection was opened.
func (e *badEnv) wantNothingSent(t testing.TB, what string, before serverStats, newConns bool) {
	t.Helper()
	after := e.stats(t)
	var sent []string
	for name, n := range after.calls {
		if d := n - before.calls[name]; d > 0 && !inspection[name] && !strings.HasPrefix(name, "client|") {
			sent = append(sent, fmt.Sprintf("%s x%d", name, d))
		}
	}
	if len(sent) > 0 {
		sort.Strings(sent)
		t.Fatalf("%s sent commands: %s", what, strings.Join(sent, ", "))
	}
	if !newConns && after.connections != before.connections {
		t.Fatalf("%s opened %d connections", what, after.connections-before.connections)
	}
}

// bystanders writes keys that no bad call may touch: one of each type,
// with and without a TTL.
func (e *badEnv) bystanders(t testing.TB) {
	t.Helper()
	b := e.raw.B()
	for _, cmd := range []rueidis.Completed{
		b.Set().Key("bystander:string").Value("v").Build(),
		b.Set().Key("bystander:ttl").Value("v").Px(10 * time.Minute).Build(),
		b.Hset().Key("bystander:hash").FieldValue().FieldValue("mode", "write").Build(),
		b.Rpush().Key("bystander:list").Element("a", "b").Build(),
		b.Zadd().Key("bystander:zset").ScoreMember().ScoreMember(1, "a").Build(),
	} {
		e.do(t, cmd)
	}
}

// acquires are the four acquire calls of a handle.
var acquires = []struct {
	name string
	call func(*fairrw.RWMutex, context.Context, ...fairrw.AcquireOption) (*fairrw.Lease, error)
}{
	{"Lock", (*fairrw.RWMutex).Lock},
	{"RLock", (*fairrw.RWMutex).RLock},
	{"TryLock", (*fairrw.RWMutex).TryLock},
	{"TryRLock", (*fairrw.RWMutex).TryRLock},
}

// wantErr fails unless err wraps sentinel; a lease granted by mistake is
// given back.
func wantErr(t testing.TB, what string, l *fairrw.Lease, err, sentinel error) {
	t.Helper()
	if l != nil {
		_ = l.Unlock(context.Background())
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: %v, want %v", what, err, sentinel)
	}
	if l != nil {
		t.Fatalf("%s: a lease returned with the error", what)
	}
}

// TestBadInputName: an invalid name fails every call of its handle with
// ErrInvalidName, and nothing is sent.
func TestBadInputName(t *testing.T) {
	e := newBadEnv(t)
	names := map[string]string{
		"empty":       "",
		"4097 bytes":  strings.Repeat("n", hidden.MaxNameLength+1),
		"1 MiB":       strings.Repeat("{n}", 1<<20/3),
		"open brace":  "a{b",
		"close brace": "x}y",
		"empty tag":   "{}",
		"tag at end":  "lock:{",
	}
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			e.flush(t)
			e.bystanders(t)
			c := e.client(t, p)
			before, stats := e.snapshot(t), e.stats(t)
			for label, name := range names {
				m := c.RWMutex(name)
				for _, a := range acquires {
					l, err := a.call(m, testCtx(t))
					wantErr(t, a.name+" on "+label, l, err, fairrw.ErrInvalidName)
					// An invalid option does not hide the invalid name.
					l, err = a.call(m, testCtx(t), fairrw.WithLease(-1))
					wantErr(t, a.name+"(WithLease(-1)) on "+label, l, err, fairrw.ErrInvalidName)
				}
				for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
					wantErr(t, "ForceUnlock on "+label, nil, m.ForceUnlock(testCtx(t), mode), fairrw.ErrInvalidName)
				}
				if err := fmt.Sprint(m.ForceUnlock(testCtx(t), fairrw.Write)); len(err) > 2*hidden.MaxNameLength {
					t.Errorf("%s: error message of %d bytes", label, len(err))
				}
			}
			e.wantNothingSent(t, "invalid names", stats, false)
			wantSame(t, "invalid names", before, e.snapshot(t))
		})
	}
}

// TestBadInputOptions: invalid Client and acquire options fail with
// ErrInvalidOption; no Client is returned, no connection opened, nothing
// sent or created.
func TestBadInputOptions(t *testing.T) {
	e := newBadEnv(t)
	e.bystanders(t)
	opt := e.r.ClientOption()
	valid := fairrw.WithClientOption(opt)
	clientOptions := map[string][]fairrw.Option{
		"no client":               nil,
		"nil option":              {valid, nil},
		"nil option first":        {nil, valid},
		"zero lease time":         {valid, fairrw.WithLeaseTime(0)},
		"negative lease time":     {valid, fairrw.WithLeaseTime(-time.Second)},
		"lease time under 3ms":    {valid, fairrw.WithLeaseTime(2 * time.Millisecond)},
		"zero unlock timeout":     {valid, fairrw.WithUnlockTimeout(0)},
		"negative unlock timeout": {valid, fairrw.WithUnlockTimeout(-time.Second)},
		"nil policy":              {valid, fairrw.WithPolicy(nil)},
		"no address":              {fairrw.WithClientOption(rueidis.ClientOption{})},
		"own invalidation hook": {fairrw.WithClientOption(rueidis.ClientOption{InitAddress: opt.InitAddress,
			OnInvalidations: func([]rueidis.RedisMessage) {}})},
		"nil client":             {fairrw.WithClient(nil)},
		"both clients":           {valid, fairrw.WithClient(e.raw)},
		"unknown publish":        {valid, hidden.WithPublish("shout").(fairrw.Option)},
		"nil tracer provider":    {valid, fairrw.WithTracerProvider(nil)},
		"nil meter provider":     {valid, fairrw.WithMeterProvider(nil)},
		"nil logger":             {valid, fairrw.WithLogger(nil)},
		"valid, then bad option": {valid, fairrw.WithPolicy(fairrw.Redisson()), fairrw.WithLeaseTime(0)},
	}
	before, stats := e.snapshot(t), e.stats(t)
	for label, opts := range clientOptions {
		c, err := fairrw.New(opts...)
		if c != nil {
			_ = c.Close()
			t.Fatalf("New(%s) returned a Client (err %v)", label, err)
		}
		if !errors.Is(err, fairrw.ErrInvalidOption) {
			t.Fatalf("New(%s): %v, want ErrInvalidOption", label, err)
		}
	}
	e.wantNothingSent(t, "invalid Client options", stats, false)
	wantSame(t, "invalid Client options", before, e.snapshot(t))

	acquireOptions := map[string][]fairrw.AcquireOption{
		"nil":                 {nil},
		"zero lease":          {fairrw.WithLease(0)},
		"negative lease":      {fairrw.WithLease(-1)},
		"lease under 1ms":     {fairrw.WithLease(time.Microsecond)},
		"valid, then bad":     {fairrw.WithLease(time.Second), fairrw.WithLease(-time.Hour)},
		"bad, then valid":     {fairrw.WithLease(-time.Hour), fairrw.WithLease(time.Second)},
		"valid, then nil":     {fairrw.WithLease(time.Second), nil},
		"most negative lease": {fairrw.WithLease(time.Duration(-1 << 63))},
		"lease of 999µs":      {fairrw.WithLease(999 * time.Microsecond)},
		"lease of 292 years":  {fairrw.WithLease(time.Duration(1<<63 - 1))},
		"lease over a year":   {fairrw.WithLease(366 * 24 * time.Hour)},
	}
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			c := e.client(t, p)
			m := c.RWMutex("badinput:options:" + p.String())
			before, stats := e.snapshot(t), e.stats(t)
			for label, opts := range acquireOptions {
				for _, a := range acquires {
					l, err := a.call(m, testCtx(t), opts...)
					wantErr(t, a.name+" with "+label, l, err, fairrw.ErrInvalidOption)
				}
			}
			wantErr(t, "ForceUnlock(Mode(0))", nil, m.ForceUnlock(testCtx(t), fairrw.Mode(0)), fairrw.ErrInvalidOption)
			wantErr(t, "ForceUnlock(Mode(9))", nil, m.ForceUnlock(testCtx(t), fairrw.Mode(9)), fairrw.ErrInvalidOption)
			e.wantNothingSent(t, "invalid acquire options", stats, true)
			wantSame(t, "invalid acquire options", before, e.snapshot(t))
		})
	}
}

// TestBadInputUnlockTwice: the second Unlock of a lease returns ErrNotHeld,
// sends nothing and leaves Redis as the first left it.
func TestBadInputUnlockTwice(t *testing.T) {
	e := newBadEnv(t)
	for _, p := range policies {
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				e.flush(t)
				e.bystanders(t)
				c := e.client(t, p)
				n := "badinput:twice:" + p.String() + ":" + mode.String()
				// Another holder keeps the lock alive for reads, so that the
				// second unlock would have something to take.
				var other *fairrw.Lease
				if mode == fairrw.Read {
					other = mustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(time.Hour))
				}
				l := mustLock(t, c.RWMutex(n), mode, fairrw.WithLease(time.Hour))
				mustUnlock(t, l)
				first := e.settled(t)
				stats := e.stats(t)
				for range 3 {
					if err := l.Unlock(testCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
						t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
					}
				}
				if l.Err() != nil {
					t.Fatalf("Err after a clean unlock and a refused one: %v", l.Err())
				}
				e.wantNothingSent(t, "second Unlock", stats, true)
				wantSame(t, "second Unlock", first, e.snapshot(t))
				if other != nil {
					mustUnlock(t, other)
				}
			})
		}
	}
}

// TestBadInputOtherOwner: there is no API to unlock someone else's hold.
// What comes closest changes nothing: another owner's TryLock and TryRLock
// are refused (ErrNotAcquired), ForceUnlock in the mode the lock is not held
// in is refused (ErrNotHeld), and a holder whose lock was forced and taken
// by another owner gets ErrNotHeld from its Unlock, which leaves the new
// owner's hold as it was.
func TestBadInputOtherOwner(t *testing.T) {
	e := newBadEnv(t)
	for _, p := range policies {
		for _, held := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(p.String()+"/"+held.String(), func(t *testing.T) {
				e.flush(t)
				e.bystanders(t)
				n := "badinput:owner:" + p.String() + ":" + held.String()
				c1, c2 := e.client(t, p), e.client(t, p)
				holder, other := c1.RWMutex(n), c2.RWMutex(n)
				l := mustLock(t, holder, held, fairrw.WithLease(time.Hour))
				// The fair policies make a refused writer wait with Lock only;
				// TryLock leaves no entry. Wake-ups: none needed.
				before := e.snapshot(t)
				tries := []fairrw.Mode{fairrw.Write}
				if held == fairrw.Write {
					tries = append(tries, fairrw.Read)
				}
				for _, mode := range tries {
					// The holder's own handle too: each acquire is a new owner.
					for _, h := range []*fairrw.RWMutex{holder, other, c1.RWMutex(n)} {
						var got *fairrw.Lease
						var err error
						if mode == fairrw.Write {
							got, err = h.TryLock(testCtx(t))
						} else {
							got, err = h.TryRLock(testCtx(t))
						}
						wantErr(t, "another owner's Try "+mode.String(), got, err, fairrw.ErrNotAcquired)
					}
				}
				wrong := fairrw.Read
				if held == fairrw.Read {
					wrong = fairrw.Write
				}
				wantErr(t, "ForceUnlock("+wrong.String()+")", nil, other.ForceUnlock(testCtx(t), wrong), fairrw.ErrNotHeld)
				wantSame(t, "refused tries and force-unlock", before, e.snapshot(t))

				// The lock is forced and taken by the other owner; the first
				// holder's Unlock must not release the new hold.
				if err := other.ForceUnlock(testCtx(t), held); err != nil {
					t.Fatalf("ForceUnlock(%s): %v", held, err)
				}
				taken := mustLock(t, other, fairrw.Write, fairrw.WithLease(time.Hour))
				// Unlock latches are the callers' own bookkeeping.
				latches := []string{compat.UnlockLatchPrefix + ":"}
				before = e.settled(t).without(latches...)
				if err := l.Unlock(testCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
					t.Fatalf("stale holder's Unlock: %v, want ErrNotHeld", err)
				}
				if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
					t.Fatalf("stale lease Err = %v, want ErrLeaseLost", l.Err())
				}
				wantSame(t, "stale holder's Unlock", before, e.settled(t).without(latches...))
				// And the new owner's hold is intact: no one else gets in.
				got, err := c1.RWMutex(n).TryRLock(testCtx(t))
				wantErr(t, "TryRLock after the stale Unlock", got, err, fairrw.ErrNotAcquired)
				mustUnlock(t, taken)
			})
		}
	}
}

// TestBadInputAfterClose: every call on a closed Client, and on its handles
// and leases, returns ErrClosed and sends nothing.
func TestBadInputAfterClose(t *testing.T) {
	e := newBadEnv(t)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			e.flush(t)
			e.bystanders(t)
			c := e.client(t, p)
			n := "badinput:closed:" + p.String()
			m := c.RWMutex(n)
			l := mustLock(t, m, fairrw.Write, fairrw.WithLease(time.Hour))
			unheld := c.RWMutex(n + ":free")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(l.Err(), fairrw.ErrClosed) || !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("held lease after Close: Err = %v, want ErrLeaseLost and ErrClosed", l.Err())
			}
			before, stats := e.snapshot(t), e.stats(t)
			late := c.RWMutex(n + ":late") // a handle made after Close
			for _, h := range []*fairrw.RWMutex{m, unheld, late} {
				for _, a := range acquires {
					got, err := a.call(h, testCtx(t))
					wantErr(t, a.name+" after Close", got, err, fairrw.ErrClosed)
					got, err = a.call(h, testCtx(t), fairrw.WithLease(time.Second))
					wantErr(t, a.name+"(WithLease) after Close", got, err, fairrw.ErrClosed)
				}
				for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
					wantErr(t, "ForceUnlock after Close", nil, h.ForceUnlock(testCtx(t), mode), fairrw.ErrClosed)
				}
			}
			wantErr(t, "Unlock after Close", nil, l.Unlock(testCtx(t)), fairrw.ErrClosed)
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			e.wantNothingSent(t, "calls after Close", stats, false)
			wantSame(t, "calls after Close", before, e.snapshot(t))
		})
	}
}

// TestBadInputPolicyMismatch: a name held under one policy is refused to
// every other (ErrPolicyMismatch, both ways), by every acquire, and Redis is
// left unchanged but for the refused owners' markers, which expire.
func TestBadInputPolicyMismatch(t *testing.T) {
	e := newBadEnv(t)
	pairs := [][2]fairrw.Policy{
		{fairrw.Redisson(), fairrw.WriterPreferring()},
		{fairrw.WriterPreferring(), fairrw.Redisson()},
		{fairrw.WriterPreferring(), fairrw.PhaseFair()},
		{fairrw.PhaseFair(), fairrw.WriterPreferring()},
		{fairrw.Redisson(), fairrw.PhaseFair()},
		{fairrw.PhaseFair(), fairrw.Redisson()},
	}
	for _, pair := range pairs {
		for _, held := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(pair[0].String()+"-holds-"+held.String()+"/"+pair[1].String(), func(t *testing.T) {
				e.flush(t)
				e.bystanders(t)
				n := "badinput:policy"
				l := mustLock(t, e.client(t, pair[0]).RWMutex(n), held, fairrw.WithLease(time.Hour))
				intruder := e.client(t, pair[1]).RWMutex(n)
				before := e.snapshot(t)
				for _, a := range acquires {
					got, err := a.call(intruder, testCtx(t))
					wantErr(t, pair[1].String()+" "+a.name, got, err, fairrw.ErrPolicyMismatch)
					if !strings.Contains(err.Error(), n) {
						t.Errorf("%s: %q does not name the lock", a.name, err)
					}
				}
				wantSame(t, pair[1].String()+" acquires on a "+pair[0].String()+" lock", before, e.settled(t).withoutMarkers())
				mustUnlock(t, l)
			})
		}
	}
}

// TestBadInputWrongType: a lock name (or another key of the lock) that
// holds a key of another type is refused with an error that names the lock
// and wraps ErrPolicyMismatch (never a raw WRONGTYPE), and the key is left
// as it was; nothing else is left but the refused owners' markers, which
// expire.
func TestBadInputWrongType(t *testing.T) {
	e := newBadEnv(t)
	b := e.raw.B()
	values := map[string]func(key string) rueidis.Completed{
		"string": func(k string) rueidis.Completed { return b.Set().Key(k).Value("x").Build() },
		"list":   func(k string) rueidis.Completed { return b.Lpush().Key(k).Element("x").Build() },
		"set":    func(k string) rueidis.Completed { return b.Sadd().Key(k).Member("x").Build() },
		"zset":   func(k string) rueidis.Completed { return b.Zadd().Key(k).ScoreMember().ScoreMember(1, "x").Build() },
		"stream": func(k string) rueidis.Completed {
			return b.Xadd().Key(k).Id("*").FieldValue().FieldValue("f", "x").Build()
		},
	}
	// Which key of a lock holds the foreign value: the lock name itself,
	// the fair policies' state hash, their readers zset, and the last
	// fencing token (a string: a non-integer one is TestBadInputFenceNotInteger).
	type target struct {
		name  string
		key   func(n string) string
		types []string // the foreign types that must be refused
	}
	all := []string{"string", "list", "set", "zset", "stream"}
	notString := []string{"list", "set", "zset", "stream"}
	notZset := []string{"string", "list", "set", "stream"}
	targets := map[string][]target{
		"redisson": {
			{name: "name", key: func(n string) string { return n }, types: all},
			{name: "fair-state", key: func(n string) string { return fwire.Fair(n).State }, types: all},
			{name: "fence", key: fwire.Fence, types: notString},
		},
		"fair": {
			// A foreign key at the name is taken for a Redisson lock.
			{name: "name", key: func(n string) string { return n }, types: all},
			{name: "fair-state", key: func(n string) string { return fwire.Fair(n).State }, types: all},
			{name: "readers", key: func(n string) string { return fwire.Fair(n).Readers }, types: notZset},
			{name: "queue", key: func(n string) string { return fwire.Fair(n).Queue }, types: notZset},
			{name: "fence", key: fwire.Fence, types: notString},
		},
	}
	for _, p := range policies {
		kind := "fair"
		if p.String() == "redisson" {
			kind = "redisson"
		}
		for _, tg := range targets[kind] {
			for _, typ := range tg.types {
				t.Run(p.String()+"/"+tg.name+"/"+typ, func(t *testing.T) {
					e.flush(t)
					e.bystanders(t)
					n := "badinput:wrongtype"
					e.do(t, values[typ](tg.key(n)))
					c := e.client(t, p)
					m := c.RWMutex(n)
					before := e.snapshot(t)
					for _, a := range acquires {
						got, err := a.call(m, testCtx(t))
						if got != nil {
							_ = got.Unlock(context.Background())
							t.Fatalf("%s granted on a %s at %s", a.name, typ, tg.key(n))
						}
						if !errors.Is(err, fairrw.ErrPolicyMismatch) || !strings.Contains(err.Error(), n) {
							t.Fatalf("%s on a %s at %s: %v (%T), want an error wrapping ErrPolicyMismatch naming the lock", a.name, typ, tg.key(n), err, err)
						}
						for _, s := range []error{fairrw.ErrNotAcquired, fairrw.ErrNotHeld, fairrw.ErrLeaseLost, fairrw.ErrClosed, fairrw.ErrInvalidName, fairrw.ErrInvalidOption} {
							if errors.Is(err, s) {
								t.Fatalf("%s: %v is %v", a.name, err, s)
							}
						}
					}
					for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
						if err := m.ForceUnlock(testCtx(t), mode); err == nil {
							t.Fatalf("ForceUnlock(%s) on a %s at %s succeeded", mode, typ, tg.key(n))
						}
					}
					wantSame(t, "acquires on a "+typ+" at "+tg.key(n), before, e.settled(t).withoutMarkers())
				})
			}
		}
	}
}

// TestBadInputFenceNotInteger: a last fencing token that holds a string
// which is not an integer counts as no last token (the key is fairrw's own,
// kept a while only): a write is granted with a token from the server's
// clock, never a raw Redis error, and the key then holds that token, with a
// TTL. (Read acquires are granted too, with the last token or 0.)
func TestBadInputFenceNotInteger(t *testing.T) {
	e := newBadEnv(t)
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			e.flush(t)
			e.bystanders(t)
			n := "badinput:fence"
			e.do(t, e.raw.B().Set().Key(fwire.Fence(n)).Value("not-a-number").Build())
			c := e.client(t, p)
			m := c.RWMutex(n)
			var last uint64
			for _, call := range []func() (*fairrw.Lease, error){
				func() (*fairrw.Lease, error) { return m.Lock(testCtx(t)) },
				func() (*fairrw.Lease, error) { return m.TryLock(testCtx(t)) },
				func() (*fairrw.Lease, error) { return c.RWMutex(n).TryLock(testCtx(t), fairrw.WithLease(time.Hour)) },
			} {
				l, err := call()
				if err != nil {
					t.Fatalf("write acquire beside a non-integer last token: %v", err)
				}
				if l.Token() <= last {
					t.Fatalf("token %d after %d, want it greater", l.Token(), last)
				}
				last = l.Token()
				if v, ok := e.do(t, e.raw.B().Get().Key(fwire.Fence(n)).Build()).ToString(); ok == nil && v != strconv.FormatUint(last, 10) {
					t.Fatalf("last token %q after a grant of %d", v, last)
				}
				mustUnlock(t, l)
			}
			if pttl, err := e.do(t, e.raw.B().Pttl().Key(fwire.Fence(n)).Build()).AsInt64(); err != nil || pttl == -1 {
				t.Fatalf("last token PTTL %d, %v: want a TTL (or gone)", pttl, err)
			}
		})
	}
}
