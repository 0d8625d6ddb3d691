package fairrw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

// TestClosedErrorNamesTheLock: every call on a closed Client fails with
// ErrClosed, and its message names the lock it was for, as every other
// error does.
func TestClosedErrorNamesTheLock(t *testing.T) {
	srv := fairrwtest.NewServer(t)
	c := srv.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held, err := c.RWMutex("held:1").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	m := c.RWMutex("orders:42")
	calls := map[string]func() error{
		"Lock":        func() error { _, err := m.Lock(ctx); return err },
		"RLock":       func() error { _, err := m.RLock(ctx); return err },
		"TryLock":     func() error { _, err := m.TryLock(ctx); return err },
		"Inspect":     func() error { _, err := c.Inspect(ctx, "orders:42"); return err },
		"ForceUnlock": func() error { return m.ForceUnlock(ctx, fairrw.Write) },
		"Mutex.Lock":  func() error { _, err := c.Mutex("orders:42").Lock(ctx); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, fairrw.ErrClosed) {
			t.Errorf("%s on a closed Client: %v, want ErrClosed", name, err)
			continue
		}
		if !strings.Contains(err.Error(), `"orders:42"`) {
			t.Errorf("%s on a closed Client: %q does not name the lock", name, err)
		}
	}
	if err := held.Unlock(ctx); !errors.Is(err, fairrw.ErrClosed) || !strings.Contains(err.Error(), `"held:1"`) {
		t.Errorf("Unlock after Close: %v, want ErrClosed naming the lock", err)
	}
}
