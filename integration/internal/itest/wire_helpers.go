package itest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// wire looks at Redis as Java Redisson would see it.
type Wire struct {
	T   testing.TB
	Raw rueidis.Client
}

func (w Wire) Hash(key string) map[string]string {
	w.T.Helper()
	m, err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		w.T.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

func (w Wire) Pttl(key string) time.Duration {
	w.T.Helper()
	n, err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		w.T.Fatalf("PTTL %s: %v", key, err)
	}
	return time.Duration(n) * time.Millisecond
}

func (w Wire) Get(key string) (string, bool) {
	w.T.Helper()
	v, err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	if err != nil {
		w.T.Fatalf("GET %s: %v", key, err)
	}
	return v, true
}

// wantHash checks the lock hash field by field, nothing more, nothing less.
func (w Wire) WantHash(key string, want map[string]string) {
	w.T.Helper()
	got := w.Hash(key)
	if len(got) != len(want) {
		w.T.Fatalf("HGETALL %s = %v, want %v", key, got, want)
	}
	for f, v := range want {
		if got[f] != v {
			w.T.Fatalf("HGETALL %s = %v, want %v", key, got, want)
		}
	}
}

// wantPTTL checks a key's PTTL lies in (want-slack, want], or up to
// hidden.LeaseMargin more: fairrw keeps every hold that much past its
// lease (Java reads the PTTL only to know how long to wait).
func (w Wire) WantPTTL(key string, want, slack time.Duration) {
	w.T.Helper()
	got := w.Pttl(key)
	if got > want+hidden.LeaseMargin || got <= want-slack {
		w.T.Fatalf("PTTL %s = %v, want within (%v, %v] (and LeaseMargin)", key, got, want-slack, want)
	}
}

func (w Wire) WantMissing(keys ...string) {
	w.T.Helper()
	for _, k := range keys {
		n, err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Exists().Key(k).Build()).AsInt64()
		if err != nil || n != 0 {
			w.T.Fatalf("key %s exists (%d, %v), want it gone", k, n, err)
		}
	}
}

// expiring reports whether key is one of fairrw's keys that stay a bounded
// time after a lock's holds ended, a lock's last fencing token
// (fwire.Fence) or a given-up owner's marker (fwire.OwnerMarker), and has
// a TTL: it vanishes on its own. Any other key, or one of those without a
// TTL, is a leftover.
func (w Wire) expiring(key string) bool {
	w.T.Helper()
	return expiring(w.T, w.Raw, key)
}

// expiring is wire.expiring on the node raw reaches.
func expiring(t testing.TB, raw rueidis.Client, key string) bool {
	t.Helper()
	fence := strings.HasPrefix(key, fwire.FairPrefix+":") && strings.HasSuffix(key, ":fence")
	if !fence && !strings.HasPrefix(key, fwire.OwnerMarkerPrefix+":") {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := raw.Do(ctx, raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	// -2: it expired since it was listed.
	return n > 0 || n == -2
}

// eventuallyNoneLike waits until no key contains part (latches are deleted
// in the background right after an unlock answers), but the fencing tokens
// and owner markers that expire on their own (see expiring).
func (w Wire) EventuallyNoneLike(part string) {
	w.T.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys, err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Keys().Pattern("*").Build()).AsStrSlice()
		if err != nil {
			w.T.Fatal(err)
		}
		var left []string
		for _, k := range keys {
			if strings.Contains(k, part) && !w.expiring(k) {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.T.Fatalf("keys left: %v", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stamped returns the stamp and accept window that fairrw sends with every
// acquire and release (see lua/common.lua), for a script run raw: now on
// this machine's clock in ms, and a 10s window.
func Stamped() []string {
	return []string{strconv.FormatInt(time.Now().UnixMilli(), 10), "10000"}
}

// args joins script arguments.
func Args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rwUnlock runs fairrw's read-write unlock script raw: owner releases a
// hold of mode ("r" or "w") with request's latch, and still holds writes
// write holds (the longest with wcover left) and reads read holds (each with
// the time left given, the longest first), as fairrw passes them.
func RwUnlock(e WireEnv, n, owner, mode, request string, writes int, wcover time.Duration, reads ...time.Duration) rueidis.RedisResult {
	e.W.T.Helper()
	a := Args([]string{mode, compat.ReadField(owner), compat.WriteField(owner), "publish", "5000", "0", "5000"}, Stamped(),
		[]string{strconv.Itoa(writes), strconv.FormatInt(wcover.Milliseconds(), 10)})
	for _, r := range reads {
		a = append(a, strconv.FormatInt(r.Milliseconds(), 10))
	}
	return e.Raw.Do(TestCtx(e.W.T), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_unlock")).Numkeys(6).
		Key(n, compat.Channel(n), compat.LeaseKeyPrefix(n, owner), compat.KeyPrefix(n), compat.UnlockLatch(n, request), fwire.OwnerMarker(n, owner)).
		Arg(a...).Build())
}

// channel records the messages published on one channel, as a Java
// subscriber would receive them.
type Channel struct {
	T    testing.TB
	msgs chan string
}

func Listen(t testing.TB, raw rueidis.Client, name string) *Channel {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	c := &Channel{T: t, msgs: make(chan string, 64)}
	done := make(chan struct{})
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
		if s.Kind == "subscribe" {
			select {
			case <-ready:
			default:
				close(ready)
			}
		}
	})
	go func() {
		defer close(done)
		_ = raw.Receive(hooked, raw.B().Subscribe().Channel(name).Build(), func(m rueidis.PubSubMessage) {
			c.msgs <- m.Message
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatalf("subscribe %s: no confirmation", name)
	}
	return c
}

// want checks that the next message is msg.
func (c *Channel) Want(msg string) {
	c.T.Helper()
	select {
	case got := <-c.msgs:
		if got != msg {
			c.T.Fatalf("message %q, want %q", got, msg)
		}
	case <-time.After(5 * time.Second):
		c.T.Fatalf("no message, want %q", msg)
	}
}

// none checks that nothing was published (up to now, and a little after).
func (c *Channel) None() {
	c.T.Helper()
	select {
	case got := <-c.msgs:
		c.T.Fatalf("unexpected message %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

// javaHolds writes a hold the way a Java Redisson client does, with raw
// commands and nothing of fairrw: HSET of fieldValues (pairs) on key, then
// PEXPIRE ttl.
func (w Wire) JavaHolds(key string, ttl time.Duration, fieldValues ...string) {
	w.T.Helper()
	hset := w.Raw.B().Hset().Key(key).FieldValue()
	for i := 0; i+1 < len(fieldValues); i += 2 {
		hset = hset.FieldValue(fieldValues[i], fieldValues[i+1])
	}
	if err := w.Raw.Do(TestCtx(w.T), hset.Build()).Error(); err != nil {
		w.T.Fatalf("HSET %s: %v", key, err)
	}
	if err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build()).Error(); err != nil {
		w.T.Fatalf("PEXPIRE %s: %v", key, err)
	}
}

// javaReleases frees a lock the way Java's last unlock does: DEL of key,
// then PUBLISH of msg on channel.
func (w Wire) JavaReleases(key, channel, msg string) {
	w.T.Helper()
	if err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Del().Key(key).Build()).Error(); err != nil {
		w.T.Fatalf("DEL %s: %v", key, err)
	}
	if err := w.Raw.Do(TestCtx(w.T), w.Raw.B().Publish().Channel(channel).Message(msg).Build()).Error(); err != nil {
		w.T.Fatalf("PUBLISH %s: %v", channel, err)
	}
}
