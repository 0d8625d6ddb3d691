package fairness

import (
	"context"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

// Mutex is one lock owner's handle, what a Worker acquires: a fairrw
// RWMutex (see RW), or a peer library's lock behind an adapter. Peers that
// only have exclusive locks serve Writer requests only.
type Mutex interface {
	// Acquire blocks until a hold of class's mode is granted, or ctx ends
	// (then it returns ctx's error, wrapped or not).
	Acquire(ctx context.Context, class Class) (Hold, error)
	// Owner names the handle in errors (a fairrw handle: its lock name,
	// since each of its acquires is a new owner).
	Owner() string
}

// Hold is a granted hold. A peer's hold also has a WokenBy method (see
// WokenBy).
type Hold interface {
	// Unlock releases the hold.
	Unlock(ctx context.Context) error
}

// WokenBy names what ended h's wait: "" when granted without waiting, else a
// wake-up path ("pubsub", "invalidation", "timer", "polling"). A
// *fairrw.Lease says it through internal/hidden (fairrw does not export it),
// a peer's hold by a WokenBy method.
func WokenBy(h Hold) string {
	if l, ok := h.(*fairrw.Lease); ok {
		return hidden.WokenBy(l)
	}
	if w, ok := h.(interface{ WokenBy() string }); ok {
		return w.WokenBy()
	}
	return ""
}

// RW returns m as a Mutex: Reader requests take RLock, Writer requests
// Lock. The Holds it returns are *fairrw.Lease.
func RW(m *fairrw.RWMutex) Mutex { return rwMutex{m} }

type rwMutex struct{ m *fairrw.RWMutex }

func (r rwMutex) Acquire(ctx context.Context, class Class) (Hold, error) {
	var l *fairrw.Lease
	var err error
	if class == Reader {
		l, err = r.m.RLock(ctx)
	} else {
		l, err = r.m.Lock(ctx)
	}
	if err != nil {
		return nil, err // never a typed nil in the interface
	}
	return l, nil
}

func (r rwMutex) Owner() string { return hidden.Name(r.m) }
