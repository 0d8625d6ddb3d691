package integration

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
type wire struct {
	t   testing.TB
	raw rueidis.Client
}

func (w wire) hash(key string) map[string]string {
	w.t.Helper()
	m, err := w.raw.Do(testCtx(w.t), w.raw.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		w.t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

func (w wire) pttl(key string) time.Duration {
	w.t.Helper()
	n, err := w.raw.Do(testCtx(w.t), w.raw.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		w.t.Fatalf("PTTL %s: %v", key, err)
	}
	return time.Duration(n) * time.Millisecond
}

func (w wire) get(key string) (string, bool) {
	w.t.Helper()
	v, err := w.raw.Do(testCtx(w.t), w.raw.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	if err != nil {
		w.t.Fatalf("GET %s: %v", key, err)
	}
	return v, true
}

// wantHash checks the lock hash field by field, nothing more, nothing less.
func (w wire) wantHash(key string, want map[string]string) {
	w.t.Helper()
	got := w.hash(key)
	if len(got) != len(want) {
		w.t.Fatalf("HGETALL %s = %v, want %v", key, got, want)
	}
	for f, v := range want {
		if got[f] != v {
			w.t.Fatalf("HGETALL %s = %v, want %v", key, got, want)
		}
	}
}

// wantPTTL checks a key's PTTL lies in (want-slack, want], or up to
// hidden.LeaseMargin more: fairrw keeps every hold that much past its
// lease (Java reads the PTTL only to know how long to wait).
func (w wire) wantPTTL(key string, want, slack time.Duration) {
	w.t.Helper()
	got := w.pttl(key)
	if got > want+hidden.LeaseMargin || got <= want-slack {
		w.t.Fatalf("PTTL %s = %v, want within (%v, %v] (and LeaseMargin)", key, got, want-slack, want)
	}
}

func (w wire) wantMissing(keys ...string) {
	w.t.Helper()
	for _, k := range keys {
		n, err := w.raw.Do(testCtx(w.t), w.raw.B().Exists().Key(k).Build()).AsInt64()
		if err != nil || n != 0 {
			w.t.Fatalf("key %s exists (%d, %v), want it gone", k, n, err)
		}
	}
}

// expiring reports whether key is one of fairrw's keys that stay a bounded
// time after a lock's holds ended, a lock's last fencing token
// (fwire.Fence) or a given-up owner's marker (fwire.OwnerMarker), and has
// a TTL: it vanishes on its own. Any other key, or one of those without a
// TTL, is a leftover.
func (w wire) expiring(key string) bool {
	w.t.Helper()
	return expiring(w.t, w.raw, key)
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
func (w wire) eventuallyNoneLike(part string) {
	w.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		keys, err := w.raw.Do(testCtx(w.t), w.raw.B().Keys().Pattern("*").Build()).AsStrSlice()
		if err != nil {
			w.t.Fatal(err)
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
			w.t.Fatalf("keys left: %v", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stamped returns the stamp and accept window that fairrw sends with every
// acquire and release (see lua/common.lua), for a script run raw: now on
// this machine's clock in ms, and a 10s window.
func stamped() []string {
	return []string{strconv.FormatInt(time.Now().UnixMilli(), 10), "10000"}
}

// args joins script arguments.
func args(parts ...[]string) []string {
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
func rwUnlock(e wireEnv, n, owner, mode, request string, writes int, wcover time.Duration, reads ...time.Duration) rueidis.RedisResult {
	e.w.t.Helper()
	a := args([]string{mode, compat.ReadField(owner), compat.WriteField(owner), "publish", "5000", "0", "5000"}, stamped(),
		[]string{strconv.Itoa(writes), strconv.FormatInt(wcover.Milliseconds(), 10)})
	for _, r := range reads {
		a = append(a, strconv.FormatInt(r.Milliseconds(), 10))
	}
	return e.raw.Do(testCtx(e.w.t), e.raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_unlock")).Numkeys(6).
		Key(n, compat.Channel(n), compat.LeaseKeyPrefix(n, owner), compat.KeyPrefix(n), compat.UnlockLatch(n, request), fwire.OwnerMarker(n, owner)).
		Arg(a...).Build())
}

// channel records the messages published on one channel, as a Java
// subscriber would receive them.
type channel struct {
	t    testing.TB
	msgs chan string
}

func listen(t testing.TB, raw rueidis.Client, name string) *channel {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	c := &channel{t: t, msgs: make(chan string, 64)}
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
func (c *channel) want(msg string) {
	c.t.Helper()
	select {
	case got := <-c.msgs:
		if got != msg {
			c.t.Fatalf("message %q, want %q", got, msg)
		}
	case <-time.After(5 * time.Second):
		c.t.Fatalf("no message, want %q", msg)
	}
}

// none checks that nothing was published (up to now, and a little after).
func (c *channel) none() {
	c.t.Helper()
	select {
	case got := <-c.msgs:
		c.t.Fatalf("unexpected message %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

// javaHolds writes a hold the way a Java Redisson client does, with raw
// commands and nothing of fairrw: HSET of fieldValues (pairs) on key, then
// PEXPIRE ttl.
func (w wire) javaHolds(key string, ttl time.Duration, fieldValues ...string) {
	w.t.Helper()
	hset := w.raw.B().Hset().Key(key).FieldValue()
	for i := 0; i+1 < len(fieldValues); i += 2 {
		hset = hset.FieldValue(fieldValues[i], fieldValues[i+1])
	}
	if err := w.raw.Do(testCtx(w.t), hset.Build()).Error(); err != nil {
		w.t.Fatalf("HSET %s: %v", key, err)
	}
	if err := w.raw.Do(testCtx(w.t), w.raw.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build()).Error(); err != nil {
		w.t.Fatalf("PEXPIRE %s: %v", key, err)
	}
}

// javaReleases frees a lock the way Java's last unlock does: DEL of key,
// then PUBLISH of msg on channel.
func (w wire) javaReleases(key, channel, msg string) {
	w.t.Helper()
	if err := w.raw.Do(testCtx(w.t), w.raw.B().Del().Key(key).Build()).Error(); err != nil {
		w.t.Fatalf("DEL %s: %v", key, err)
	}
	if err := w.raw.Do(testCtx(w.t), w.raw.B().Publish().Channel(channel).Message(msg).Build()).Error(); err != nil {
		w.t.Fatalf("PUBLISH %s: %v", channel, err)
	}
}
