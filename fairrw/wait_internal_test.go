package fairrw

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/redistest"
)

// A waitGroup built by hand: the wake-up rules need no Redis.
func testGroup(modes ...Mode) (*waitRegistry, *waitGroup, []*waiter) {
	r := &waitRegistry{c: &Client{closing: make(chan struct{})}, groups: map[string]*waitGroup{}, byTracked: map[string]*waitGroup{}}
	g := &waitGroup{registry: r, keys: &lockKeys{name: "n", channel: "ch", tracked: "n"}, ready: make(chan struct{}), cancel: func() {}}
	r.groups["ch"] = g
	r.byTracked["n"] = g
	var ws []*waiter
	for _, m := range modes {
		w := &waiter{group: g, mode: m, wake: make(chan wakeSource, 1)}
		g.waiters = append(g.waiters, w)
		ws = append(ws, w)
	}
	return r, g, ws
}

func woken(ws []*waiter) []bool {
	out := make([]bool, len(ws))
	for i, w := range ws {
		select {
		case <-w.wake:
			out[i] = true
		default:
		}
	}
	return out
}

func wantWoken(t *testing.T, ws []*waiter, want ...bool) {
	t.Helper()
	got := woken(ws)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("woken %v, want %v", got, want)
		}
	}
}

func TestWakeRules(t *testing.T) {
	t.Run("a write release wakes every reader and one writer", func(t *testing.T) {
		r, g, ws := testGroup(Write, Read, Write, Read)
		r.onMessage(g, "1")
		wantWoken(t, ws, true, true, false, true)
	})
	t.Run("a read release wakes the longest waiter", func(t *testing.T) {
		r, g, ws := testGroup(Write, Read, Write)
		r.onMessage(g, "0")
		wantWoken(t, ws, true, false, false)
	})
	t.Run("a waiter already retrying absorbs the wake-up", func(t *testing.T) {
		r, g, ws := testGroup(Write, Write, Write)
		ws[1].busy = true
		r.onMessage(g, "0")
		wantWoken(t, ws, false, true, false)
	})
	t.Run("an invalidation of the lock key wakes every reader and one writer", func(t *testing.T) {
		// A downgrade publishes nothing: its invalidation must reach the
		// readers, not just the first waiter (a writer that then fails).
		r, _, ws := testGroup(Write, Read, Write, Read)
		r.onInvalidations([]rueidis.RedisMessage{stringMessage(t, "n")})
		wantWoken(t, ws, true, true, false, true)
		r.onInvalidations([]rueidis.RedisMessage{stringMessage(t, "another key")})
		wantWoken(t, ws, false, false, false, false)
	})
	t.Run("an empty invalidation wakes none; nil wakes all", func(t *testing.T) {
		r, _, ws := testGroup(Write, Write)
		r.onInvalidations([]rueidis.RedisMessage{})
		wantWoken(t, ws, false, false)
		r.onInvalidations(nil)
		wantWoken(t, ws, true, true)
	})
	t.Run("a reader that enters hands over to the next idle reader", func(t *testing.T) {
		r, _, ws := testGroup(Read, Write, Read, Read)
		r.granted(ws[0])
		wantWoken(t, ws, false, false, true, false)
	})
	t.Run("a writer that enters hands over nothing", func(t *testing.T) {
		r, _, ws := testGroup(Write, Read)
		r.granted(ws[0])
		wantWoken(t, ws, false, false)
	})
	t.Run("a waiter that leaves passes on an unused wake-up", func(t *testing.T) {
		r, g, ws := testGroup(Write, Write)
		r.onMessage(g, "0")
		r.leave(ws[0])
		wantWoken(t, ws, false, true)
		if len(g.waiters) != 1 {
			t.Fatalf("%d waiters left", len(g.waiters))
		}
	})
	t.Run("a fair release names the head writer: only it wakes", func(t *testing.T) {
		r, g, ws := testGroup(Write, Read, Write)
		ws[2].owner = "c:7"
		r.onMessage(g, "w:c:7")
		wantWoken(t, ws, false, false, true)
		r.onMessage(g, "w:elsewhere:1")
		wantWoken(t, ws, false, false, false)
	})
	t.Run("a fair release admitting readers wakes every reader, no writer", func(t *testing.T) {
		r, g, ws := testGroup(Read, Write, Read)
		r.onMessage(g, "r")
		wantWoken(t, ws, true, false, true)
	})
	t.Run("the last waiter out ends the group", func(t *testing.T) {
		r, _, ws := testGroup(Read)
		r.leave(ws[0])
		if len(r.groups) != 0 {
			t.Fatal("group kept after its last waiter left")
		}
	})
}

// stringMessage returns a RedisMessage holding the string v, as an
// invalidation names a key: read back from a miniredis, since rueidis builds
// messages only from replies.
func stringMessage(t *testing.T, v string) rueidis.RedisMessage {
	t.Helper()
	_, opt := redistest.Miniredis(t)
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Do(ctx, rdb.B().Set().Key("k").Value(v).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	msg, err := rdb.Do(ctx, rdb.B().Get().Key("k").Build()).ToMessage()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}
