package itest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/lua"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// lateCase is a policy (or the Mutex) and the digests of its acquire and
// unlock scripts, to recognize their commands on the wire.
type LateCase struct {
	Name           string
	Policy         fairrw.Policy
	Mutex          bool
	Acquire, Unlck string
}

func scriptSHA(parts ...string) string {
	s := sha1.Sum([]byte(lua.Compose(parts...)))
	return hex.EncodeToString(s[:])
}

func LateCases() []LateCase {
	fairAcq, fairUnl := scriptSHA("fair_acquire_fast", "common", "fair_lib", "fair_acquire"), scriptSHA("common", "fair_lib", "fair_unlock")
	return []LateCase{
		{"redisson", fairrw.Redisson(), false, scriptSHA("common", "redisson_lib", "redisson_write_acquire"), scriptSHA("common", "redisson_lib", "redisson_unlock")},
		{"writer-preferring", fairrw.WriterPreferring(), false, fairAcq, fairUnl},
		{"phase-fair", fairrw.PhaseFair(), false, fairAcq, fairUnl},
		{"mutex", fairrw.Redisson(), true, scriptSHA("common", "redisson_lib", "redisson_lock_acquire"), scriptSHA("common", "redisson_lib", "redisson_lock_unlock")},
	}
}

func (lc LateCase) Client(t *testing.T, addr string) *fairrw.Client {
	t.Helper()
	c, err := fairrw.New(fairrw.WithPolicy(lc.Policy), fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lock takes the write (or the mutex) for a new owner.
func (lc LateCase) Lock(ctx context.Context, c *fairrw.Client, name string, try bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case lc.Mutex && try:
		return c.Mutex(name).TryLock(ctx, opts...)
	case lc.Mutex:
		return c.Mutex(name).Lock(ctx, opts...)
	case try:
		return c.RWMutex(name).TryLock(ctx, opts...)
	default:
		return c.RWMutex(name).Lock(ctx, opts...)
	}
}

// setup starts a redis-server, a hold proxy before it, a Client through the
// proxy (scripts loaded, so the next command is one EVALSHA) and one
// direct.
func (lc LateCase) Setup(t *testing.T) (*HoldProxy, *fairrw.Client, *fairrw.Client) {
	r := redistest.StartProcess(t)
	p := StartHoldProxy(t, r.Addr)
	c, other := lc.Client(t, p.Addr()), lc.Client(t, r.Addr)
	w, err := lc.Lock(TestCtx(t), c, "warm", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(TestCtx(t)); err != nil {
		t.Fatal(err)
	}
	return p, c, other
}
