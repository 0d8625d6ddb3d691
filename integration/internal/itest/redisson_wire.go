package itest

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

type WireEnv struct {
	R   *redistest.Redis
	Raw rueidis.Client
	W   Wire
}

func NewWireEnv(t *testing.T) WireEnv {
	r := redistest.Start(t)
	raw := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	return WireEnv{R: r, Raw: raw, W: Wire{T: t, Raw: raw}}
}

func (e WireEnv) Client(t *testing.T, opts ...fairrw.Option) *fairrw.Client {
	return NewClient(t, e.R, Transports[0], append([]fairrw.Option{fairrw.WithPolicy(fairrw.Redisson())}, opts...)...)
}

func MustLock(t *testing.T, m *fairrw.RWMutex, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := locktest.Acquire(TestCtx(t), m, mode, true, opts...)
	if err != nil {
		t.Fatalf("%s %s: %v", mode, hidden.Name(m), err)
	}
	return l
}

// mustFurther takes a further hold of mode for the owner of l: a reentrant
// hold, or a downgrade's read from the write.
func MustFurther(t *testing.T, l *fairrw.Lease, mode fairrw.Mode, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	var got *fairrw.Lease
	var err error
	if mode == fairrw.Write {
		got, err = l.Lock(TestCtx(t), opts...)
	} else {
		got, err = l.RLock(TestCtx(t), opts...)
	}
	if err != nil {
		t.Fatalf("further %s on %s: %v", mode, hidden.Name(l), err)
	}
	if got.Owner() != l.Owner() {
		t.Fatalf("further %s under owner %s, want %s", mode, got.Owner(), l.Owner())
	}
	return got
}

func MustUnlock(t *testing.T, l *fairrw.Lease) {
	t.Helper()
	if err := l.Unlock(TestCtx(t)); err != nil {
		t.Fatalf("unlock: %v", err)
	}
}
