package wait

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// A Group built by hand: the wake-up rules need no Redis. f is the format
// of a policy's messages: JavaFormat Redisson's, FairFormat the fair ones'.
func testGroup(f Format, modes ...Mode) (*Registry, *Group, []*Waiter) {
	r := &Registry{cfg: Config{Closing: make(chan struct{})}, groups: map[string]*Group{}, byTracked: map[string]*Group{}}
	g := &Group{registry: r, keys: &Keys{Channel: "ch", Tracked: "n", Format: f}, ready: make(chan struct{}), cancel: func() {}}
	r.groups["ch"] = g
	r.byTracked["n"] = g
	var ws []*Waiter
	for _, m := range modes {
		w := &Waiter{group: g, mode: m, wake: make(chan Source, 1)}
		g.waiters = append(g.waiters, w)
		ws = append(ws, w)
	}
	return r, g, ws
}

func woken(ws []*Waiter) []bool {
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

func wantWoken(t *testing.T, ws []*Waiter, want ...bool) {
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
		r, g, ws := testGroup(JavaFormat, Write, Read, Write, Read)
		r.onMessage(g, "1")
		wantWoken(t, ws, true, true, false, true)
	})
	t.Run("a read release wakes the longest waiter", func(t *testing.T) {
		r, g, ws := testGroup(JavaFormat, Write, Read, Write)
		r.onMessage(g, "0")
		wantWoken(t, ws, true, false, false)
	})
	t.Run("a waiter already retrying absorbs the wake-up", func(t *testing.T) {
		r, g, ws := testGroup(JavaFormat, Write, Write, Write)
		ws[1].busy = true
		r.onMessage(g, "0")
		wantWoken(t, ws, false, true, false)
	})
	t.Run("an invalidation of the lock key wakes every reader and one writer", func(t *testing.T) {
		// A downgrade publishes nothing: its invalidation must reach the
		// readers, not just the first waiter (a writer that then fails).
		r, _, ws := testGroup(JavaFormat, Write, Read, Write, Read)
		r.OnInvalidations([]rueidis.RedisMessage{stringMessage(t, "n")})
		wantWoken(t, ws, true, true, false, true)
		r.OnInvalidations([]rueidis.RedisMessage{stringMessage(t, "another key")})
		wantWoken(t, ws, false, false, false, false)
	})
	t.Run("an empty invalidation wakes none; nil wakes all", func(t *testing.T) {
		r, _, ws := testGroup(JavaFormat, Write, Write)
		r.OnInvalidations([]rueidis.RedisMessage{})
		wantWoken(t, ws, false, false)
		r.OnInvalidations(nil)
		wantWoken(t, ws, true, true)
	})
	t.Run("a reader that enters hands over to the next idle reader", func(t *testing.T) {
		r, _, ws := testGroup(JavaFormat, Read, Write, Read, Read)
		r.Granted(ws[0])
		wantWoken(t, ws, false, false, true, false)
	})
	t.Run("a writer that enters hands over nothing", func(t *testing.T) {
		r, _, ws := testGroup(JavaFormat, Write, Read)
		r.Granted(ws[0])
		wantWoken(t, ws, false, false)
	})
	t.Run("a waiter that leaves passes on an unused wake-up", func(t *testing.T) {
		r, g, ws := testGroup(JavaFormat, Write, Write)
		r.onMessage(g, "0")
		r.Leave(ws[0])
		wantWoken(t, ws, false, true)
		if len(g.waiters) != 1 {
			t.Fatalf("%d waiters left", len(g.waiters))
		}
	})
	t.Run("a fair release that grants names the writer: only it wakes, holding", func(t *testing.T) {
		r, g, ws := testGroup(FairFormat, Write, Read, Write)
		ws[2].owner = "c:7"
		r.onMessage(g, "g:1234:c:7")
		wantWoken(t, ws, false, false, true)
		if token, by, ok := ws[2].TakeGrant(); !ok || token != 1234 || by != Grant {
			t.Fatalf("TakeGrant = %d, %v, %v; want 1234, grant, true", token, by, ok)
		}
		if _, _, ok := ws[0].TakeGrant(); ok {
			t.Fatal("a writer not named was granted")
		}
		r.onMessage(g, "g:99:elsewhere:1")
		wantWoken(t, ws, false, false, false)
	})
	t.Run("a release reply in this Client grants before the message", func(t *testing.T) {
		r, g, ws := testGroup(FairFormat, Write, Write)
		ws[1].owner = "c:8"
		r.Deliver(g.keys, "c:8", 77)
		wantWoken(t, ws, false, true)
		if token, by, ok := ws[1].TakeGrant(); !ok || token != 77 || by != Reply {
			t.Fatalf("TakeGrant = %d, %v, %v; want 77, reply, true", token, by, ok)
		}
		r.onMessage(g, "g:77:c:8") // the message that follows changes nothing
		if token, by, _ := ws[1].TakeGrant(); token != 77 || by != Reply {
			t.Fatalf("after the message: %d, %v", token, by)
		}
		r.Rename(ws[1], "c:9")
		if _, _, ok := ws[1].TakeGrant(); ok {
			t.Fatal("a grant survived its waiter's change of owner")
		}
	})
	t.Run("one grant told twice wakes its writer once, and its leaving wakes no one", func(t *testing.T) {
		// Found measuring script calls per grant: the second signal of one grant stayed pending until
		// the granted writer left, which passed it on to a writer that
		// then made an attempt for nothing (0.16 script calls per grant).
		for _, replyFirst := range []bool{true, false} {
			r, g, ws := testGroup(FairFormat, Write, Write, Read)
			ws[0].owner = "c:8"
			first, second := func() { r.Deliver(g.keys, "c:8", 77) }, func() { r.onMessage(g, "g:77:c:8") }
			if !replyFirst {
				first, second = second, first
			}
			first()
			wantWoken(t, ws, true, false, false) // the waiter takes the wake-up
			second()
			r.onMessage(g, "g:76:c:8") // a stale message of an earlier grant
			wantWoken(t, ws, false, false, false)
			if token, _, ok := ws[0].TakeGrant(); !ok || token != 77 {
				t.Fatalf("replyFirst=%v: TakeGrant = %d, %v; want 77, true", replyFirst, token, ok)
			}
			r.Leave(ws[0])
			wantWoken(t, ws[1:], false, false)
		}
	})
	t.Run("a later grant to the same writer wakes it again", func(t *testing.T) {
		r, g, ws := testGroup(FairFormat, Write)
		ws[0].owner = "c:8"
		r.onMessage(g, "g:77:c:8")
		wantWoken(t, ws, true)
		r.onMessage(g, "g:78:c:8")
		wantWoken(t, ws, true)
		if token, _, _ := ws[0].TakeGrant(); token != 78 {
			t.Fatalf("token %d, want 78", token)
		}
	})
	t.Run("a writer that leaves with its own grant pending passes nothing on", func(t *testing.T) {
		// Its attempt took the lock while the grant's message was on its
		// way: the wake-up concerns it alone.
		r, g, ws := testGroup(FairFormat, Write, Write, Read)
		ws[0].owner, ws[0].busy = "c:8", true
		r.onMessage(g, "g:77:c:8")
		r.Leave(ws[0])
		wantWoken(t, ws[1:], false, false)
		// A wake-up that was not a grant is still passed on.
		r.onMessage(g, "r")
		r.Leave(ws[2])
		wantWoken(t, ws[1:2], true)
	})
	t.Run("malformed fair messages wake no one", func(t *testing.T) {
		r, g, ws := testGroup(FairFormat, Write, Read)
		for _, msg := range []string{"g:", "g:x:c:1", "g:12", "w:c:1", "0", "1", ""} {
			r.onMessage(g, msg)
		}
		wantWoken(t, ws, false, false)
	})
	t.Run("a fair release admitting readers wakes every reader, no queued writer", func(t *testing.T) {
		r, g, ws := testGroup(FairFormat, Read, Write, Read, Write)
		ws[3].unqueued = true
		r.onMessage(g, "r")
		wantWoken(t, ws, true, false, true, true)
	})
	t.Run("the last waiter out ends the group", func(t *testing.T) {
		r, _, ws := testGroup(JavaFormat, Read)
		r.Leave(ws[0])
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
