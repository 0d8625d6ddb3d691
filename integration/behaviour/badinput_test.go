package behaviour

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

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
	e := itest.NewBadEnv(t)
	names := map[string]string{
		"empty":       "",
		"4097 bytes":  strings.Repeat("n", hidden.MaxNameLength+1),
		"1 MiB":       strings.Repeat("{n}", 1<<20/3),
		"open brace":  "a{b",
		"close brace": "x}y",
		"empty tag":   "{}",
		"tag at end":  "lock:{",
	}
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			e.Flush(t)
			e.Bystanders(t)
			c := e.Client(t, p)
			before, stats := e.Snapshot(t), e.Stats(t)
			for label, name := range names {
				m := c.RWMutex(name)
				for _, a := range acquires {
					l, err := a.call(m, itest.TestCtx(t))
					wantErr(t, a.name+" on "+label, l, err, fairrw.ErrInvalidName)
					// An invalid option does not hide the invalid name.
					l, err = a.call(m, itest.TestCtx(t), fairrw.WithLease(-1))
					wantErr(t, a.name+"(WithLease(-1)) on "+label, l, err, fairrw.ErrInvalidName)
				}
				for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
					wantErr(t, "ForceUnlock on "+label, nil, m.ForceUnlock(itest.TestCtx(t), mode), fairrw.ErrInvalidName)
				}
				if err := fmt.Sprint(m.ForceUnlock(itest.TestCtx(t), fairrw.Write)); len(err) > 2*hidden.MaxNameLength {
					t.Errorf("%s: error message of %d bytes", label, len(err))
				}
			}
			e.WantNothingSent(t, "invalid names", stats, false)
			itest.WantSame(t, "invalid names", before, e.Snapshot(t))
		})
	}
}

// TestBadInputOptions: invalid Client and acquire options fail with
// ErrInvalidOption; no Client is returned, no connection opened, nothing
// sent or created.
func TestBadInputOptions(t *testing.T) {
	e := itest.NewBadEnv(t)
	e.Bystanders(t)
	opt := e.R.ClientOption()
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
		"both clients":           {valid, fairrw.WithClient(e.Raw)},
		"unknown publish":        {valid, hidden.WithPublish("shout").(fairrw.Option)},
		"nil tracer provider":    {valid, fairrw.WithTracerProvider(nil)},
		"nil meter provider":     {valid, fairrw.WithMeterProvider(nil)},
		"nil logger":             {valid, fairrw.WithLogger(nil)},
		"valid, then bad option": {valid, fairrw.WithPolicy(fairrw.Redisson()), fairrw.WithLeaseTime(0)},
	}
	before, stats := e.Snapshot(t), e.Stats(t)
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
	e.WantNothingSent(t, "invalid Client options", stats, false)
	itest.WantSame(t, "invalid Client options", before, e.Snapshot(t))

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
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			c := e.Client(t, p)
			m := c.RWMutex("badinput:options:" + p.String())
			before, stats := e.Snapshot(t), e.Stats(t)
			for label, opts := range acquireOptions {
				for _, a := range acquires {
					l, err := a.call(m, itest.TestCtx(t), opts...)
					wantErr(t, a.name+" with "+label, l, err, fairrw.ErrInvalidOption)
				}
			}
			wantErr(t, "ForceUnlock(Mode(0))", nil, m.ForceUnlock(itest.TestCtx(t), fairrw.Mode(0)), fairrw.ErrInvalidOption)
			wantErr(t, "ForceUnlock(Mode(9))", nil, m.ForceUnlock(itest.TestCtx(t), fairrw.Mode(9)), fairrw.ErrInvalidOption)
			e.WantNothingSent(t, "invalid acquire options", stats, true)
			itest.WantSame(t, "invalid acquire options", before, e.Snapshot(t))
		})
	}
}

// TestBadInputUnlockTwice: the second Unlock of a lease returns ErrNotHeld,
// sends nothing and leaves Redis as the first left it.
func TestBadInputUnlockTwice(t *testing.T) {
	e := itest.NewBadEnv(t)
	for _, p := range itest.Policies {
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				e.Flush(t)
				e.Bystanders(t)
				c := e.Client(t, p)
				n := "badinput:twice:" + p.String() + ":" + mode.String()
				// Another holder keeps the lock alive for reads, so that the
				// second unlock would have something to take.
				var other *fairrw.Lease
				if mode == fairrw.Read {
					other = itest.MustLock(t, c.RWMutex(n), fairrw.Read, fairrw.WithLease(time.Hour))
				}
				l := itest.MustLock(t, c.RWMutex(n), mode, fairrw.WithLease(time.Hour))
				itest.MustUnlock(t, l)
				first := e.Settled(t)
				stats := e.Stats(t)
				for range 3 {
					if err := l.Unlock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
						t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
					}
				}
				if l.Err() != nil {
					t.Fatalf("Err after a clean unlock and a refused one: %v", l.Err())
				}
				e.WantNothingSent(t, "second Unlock", stats, true)
				itest.WantSame(t, "second Unlock", first, e.Snapshot(t))
				if other != nil {
					itest.MustUnlock(t, other)
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
	e := itest.NewBadEnv(t)
	for _, p := range itest.Policies {
		for _, held := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			t.Run(p.String()+"/"+held.String(), func(t *testing.T) {
				e.Flush(t)
				e.Bystanders(t)
				n := "badinput:owner:" + p.String() + ":" + held.String()
				c1, c2 := e.Client(t, p), e.Client(t, p)
				holder, other := c1.RWMutex(n), c2.RWMutex(n)
				l := itest.MustLock(t, holder, held, fairrw.WithLease(time.Hour))
				// The fair policies make a refused writer wait with Lock only;
				// TryLock leaves no entry. Wake-ups: none needed.
				before := e.Snapshot(t)
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
							got, err = h.TryLock(itest.TestCtx(t))
						} else {
							got, err = h.TryRLock(itest.TestCtx(t))
						}
						wantErr(t, "another owner's Try "+mode.String(), got, err, fairrw.ErrNotAcquired)
					}
				}
				wrong := fairrw.Read
				if held == fairrw.Read {
					wrong = fairrw.Write
				}
				wantErr(t, "ForceUnlock("+wrong.String()+")", nil, other.ForceUnlock(itest.TestCtx(t), wrong), fairrw.ErrNotHeld)
				itest.WantSame(t, "refused tries and force-unlock", before, e.Snapshot(t))

				// The lock is forced and taken by the other owner; the first
				// holder's Unlock must not release the new hold.
				if err := other.ForceUnlock(itest.TestCtx(t), held); err != nil {
					t.Fatalf("ForceUnlock(%s): %v", held, err)
				}
				taken := itest.MustLock(t, other, fairrw.Write, fairrw.WithLease(time.Hour))
				// Unlock latches are the callers' own bookkeeping.
				latches := []string{compat.UnlockLatchPrefix + ":"}
				before = e.Settled(t).Without(latches...)
				if err := l.Unlock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotHeld) {
					t.Fatalf("stale holder's Unlock: %v, want ErrNotHeld", err)
				}
				if !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
					t.Fatalf("stale lease Err = %v, want ErrLeaseLost", l.Err())
				}
				itest.WantSame(t, "stale holder's Unlock", before, e.Settled(t).Without(latches...))
				// And the new owner's hold is intact: no one else gets in.
				got, err := c1.RWMutex(n).TryRLock(itest.TestCtx(t))
				wantErr(t, "TryRLock after the stale Unlock", got, err, fairrw.ErrNotAcquired)
				itest.MustUnlock(t, taken)
			})
		}
	}
}

// TestBadInputAfterClose: every call on a closed Client, and on its handles
// and leases, returns ErrClosed and sends nothing.
func TestBadInputAfterClose(t *testing.T) {
	e := itest.NewBadEnv(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			e.Flush(t)
			e.Bystanders(t)
			c := e.Client(t, p)
			n := "badinput:closed:" + p.String()
			m := c.RWMutex(n)
			l := itest.MustLock(t, m, fairrw.Write, fairrw.WithLease(time.Hour))
			unheld := c.RWMutex(n + ":free")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(l.Err(), fairrw.ErrClosed) || !errors.Is(l.Err(), fairrw.ErrLeaseLost) {
				t.Fatalf("held lease after Close: Err = %v, want ErrLeaseLost and ErrClosed", l.Err())
			}
			before, stats := e.Snapshot(t), e.Stats(t)
			late := c.RWMutex(n + ":late") // a handle made after Close
			for _, h := range []*fairrw.RWMutex{m, unheld, late} {
				for _, a := range acquires {
					got, err := a.call(h, itest.TestCtx(t))
					wantErr(t, a.name+" after Close", got, err, fairrw.ErrClosed)
					got, err = a.call(h, itest.TestCtx(t), fairrw.WithLease(time.Second))
					wantErr(t, a.name+"(WithLease) after Close", got, err, fairrw.ErrClosed)
				}
				for _, mode := range []fairrw.Mode{fairrw.Read, fairrw.Write} {
					wantErr(t, "ForceUnlock after Close", nil, h.ForceUnlock(itest.TestCtx(t), mode), fairrw.ErrClosed)
				}
			}
			wantErr(t, "Unlock after Close", nil, l.Unlock(itest.TestCtx(t)), fairrw.ErrClosed)
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			e.WantNothingSent(t, "calls after Close", stats, false)
			itest.WantSame(t, "calls after Close", before, e.Snapshot(t))
		})
	}
}

// TestBadInputPolicyMismatch: a name held under one policy is refused to
// every other (ErrPolicyMismatch, both ways), by every acquire, and Redis is
// left unchanged but for the refused owners' markers, which expire.
func TestBadInputPolicyMismatch(t *testing.T) {
	e := itest.NewBadEnv(t)
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
				e.Flush(t)
				e.Bystanders(t)
				n := "badinput:policy"
				l := itest.MustLock(t, e.Client(t, pair[0]).RWMutex(n), held, fairrw.WithLease(time.Hour))
				intruder := e.Client(t, pair[1]).RWMutex(n)
				before := e.Snapshot(t)
				for _, a := range acquires {
					got, err := a.call(intruder, itest.TestCtx(t))
					wantErr(t, pair[1].String()+" "+a.name, got, err, fairrw.ErrPolicyMismatch)
					if !strings.Contains(err.Error(), n) {
						t.Errorf("%s: %q does not name the lock", a.name, err)
					}
				}
				itest.WantSame(t, pair[1].String()+" acquires on a "+pair[0].String()+" lock", before, e.Settled(t).WithoutMarkers())
				itest.MustUnlock(t, l)
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
	e := itest.NewBadEnv(t)
	b := e.Raw.B()
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
	for _, p := range itest.Policies {
		kind := "fair"
		if p.String() == "redisson" {
			kind = "redisson"
		}
		for _, tg := range targets[kind] {
			for _, typ := range tg.types {
				t.Run(p.String()+"/"+tg.name+"/"+typ, func(t *testing.T) {
					e.Flush(t)
					e.Bystanders(t)
					n := "badinput:wrongtype"
					e.Do(t, values[typ](tg.key(n)))
					c := e.Client(t, p)
					m := c.RWMutex(n)
					before := e.Snapshot(t)
					for _, a := range acquires {
						got, err := a.call(m, itest.TestCtx(t))
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
						if err := m.ForceUnlock(itest.TestCtx(t), mode); err == nil {
							t.Fatalf("ForceUnlock(%s) on a %s at %s succeeded", mode, typ, tg.key(n))
						}
					}
					itest.WantSame(t, "acquires on a "+typ+" at "+tg.key(n), before, e.Settled(t).WithoutMarkers())
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
	e := itest.NewBadEnv(t)
	for _, p := range itest.Policies {
		t.Run(p.String(), func(t *testing.T) {
			e.Flush(t)
			e.Bystanders(t)
			n := "badinput:fence"
			e.Do(t, e.Raw.B().Set().Key(fwire.Fence(n)).Value("not-a-number").Build())
			c := e.Client(t, p)
			m := c.RWMutex(n)
			var last uint64
			for _, call := range []func() (*fairrw.Lease, error){
				func() (*fairrw.Lease, error) { return m.Lock(itest.TestCtx(t)) },
				func() (*fairrw.Lease, error) { return m.TryLock(itest.TestCtx(t)) },
				func() (*fairrw.Lease, error) {
					return c.RWMutex(n).TryLock(itest.TestCtx(t), fairrw.WithLease(time.Hour))
				},
			} {
				l, err := call()
				if err != nil {
					t.Fatalf("write acquire beside a non-integer last token: %v", err)
				}
				if l.Token() <= last {
					t.Fatalf("token %d after %d, want it greater", l.Token(), last)
				}
				last = l.Token()
				if v, ok := e.Do(t, e.Raw.B().Get().Key(fwire.Fence(n)).Build()).ToString(); ok == nil && v != strconv.FormatUint(last, 10) {
					t.Fatalf("last token %q after a grant of %d", v, last)
				}
				itest.MustUnlock(t, l)
			}
			if pttl, err := e.Do(t, e.Raw.B().Pttl().Key(fwire.Fence(n)).Build()).AsInt64(); err != nil || pttl == -1 {
				t.Fatalf("last token PTTL %d, %v: want a TTL (or gone)", pttl, err)
			}
		})
	}
}
