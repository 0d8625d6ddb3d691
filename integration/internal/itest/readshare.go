package itest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// noKeysLeftBut is noKeysLeft for the keys that do not start with prefix
// (none if it is empty); those must expire.
func NoKeysLeftBut(t *testing.T, r *redistest.Redis, name, prefix string) {
	t.Helper()
	raw := r.Client(t, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys, err := raw.Do(context.Background(), raw.B().Keys().Pattern("*"+name+"*").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, k := range keys {
			if KeptLatch(t, raw, k) {
				continue
			}
			if prefix != "" && strings.HasPrefix(k, prefix) {
				if ttl, err := raw.Do(context.Background(), raw.B().Pttl().Key(k).Build()).AsInt64(); err == nil && ttl > 0 {
					continue
				}
			}
			left = append(left, k)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left of %q: %v", name, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rlocks takes n reads of m, one after the other, each held on.
func Rlocks(t *testing.T, ctx context.Context, m *fairrw.RWMutex, n int) []*fairrw.Lease {
	t.Helper()
	leases := make([]*fairrw.Lease, 0, n)
	for range n {
		l, err := m.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	return leases
}
