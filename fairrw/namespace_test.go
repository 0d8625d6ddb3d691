package fairrw_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// TestNamespace: a Client with a namespace takes, inspects and
// force-unlocks names inside it, and refuses every other name with
// ErrInvalidName before sending anything (the server sees no key of it).
func TestNamespace(t *testing.T) {
	srv := fairrwtest.NewServer(t)
	c := srv.NewClient(t, fairrw.WithNamespace("billing"))
	ctx := t.Context()
	l, err := c.RWMutex("billing:orders").Lock(ctx)
	if err != nil {
		t.Fatalf("a name in the namespace: %v", err)
	}
	if _, err := c.Inspect(ctx, "billing:orders"); err != nil {
		t.Fatalf("Inspect in the namespace: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "billing", "billing:", "billingx:orders", "shipping:orders", "{billing:orders}", "x:billing:orders"} {
		if _, err := c.RWMutex(name).TryLock(ctx); !errors.Is(err, fairrw.ErrInvalidName) {
			t.Errorf("RWMutex(%q).TryLock: %v, want ErrInvalidName", name, err)
		}
		if _, err := c.Mutex(name).TryLock(ctx); !errors.Is(err, fairrw.ErrInvalidName) {
			t.Errorf("Mutex(%q).TryLock: %v, want ErrInvalidName", name, err)
		}
		if err := c.RWMutex(name).ForceUnlock(ctx, fairrw.Write); !errors.Is(err, fairrw.ErrInvalidName) {
			t.Errorf("RWMutex(%q).ForceUnlock: %v, want ErrInvalidName", name, err)
		}
		if _, err := c.Inspect(ctx, name); !errors.Is(err, fairrw.ErrInvalidName) {
			t.Errorf("Inspect(%q): %v, want ErrInvalidName", name, err)
		}
	}
	for _, k := range srv.Miniredis().Keys() {
		if !strings.Contains(k, "billing:orders") {
			t.Errorf("key %q in Redis: a refused name reached it", k)
		}
	}
}
