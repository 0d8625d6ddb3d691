package script

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/slot"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestExecTrackedFollowsRedirect: a cluster client whose slot map still
// names a demoted primary sends ExecTracked there and is redirected (MOVED)
// to the new primary. CLIENT CACHING YES must go along with the script, so
// that the key it read is tracked where it lives: a change to it then comes
// back as an invalidation. (Sent as two commands, the redirect took the
// script alone to the new primary, and the key went untracked.)
func TestExecTrackedFollowsRedirect(t *testing.T) {
	c := redistest.StartClusterProcesses(t, 3, 1)
	const key = "{tracked}:key"
	invalidated := make(chan struct{}, 1)
	rdb := c.Client(t, func(o *rueidis.ClientOption) {
		o.OnInvalidations = func(ms []rueidis.RedisMessage) {
			for _, m := range ms {
				if k, _ := m.ToString(); k == key {
					select {
					case invalidated <- struct{}{}:
					default:
					}
				}
			}
		}
	})
	raw := c.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := NewFrom("tracked_get", "return redis.call('get', KEYS[1])", false)
	if err := raw.Do(ctx, raw.B().Set().Key(key).Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// The client learns the slot map, and the script is cached on the
	// primary and its replica. Untracked: the demoted primary, which still
	// applies the key's changes as a replica, must not be the one that
	// reports the change below.
	if got, err := s.Exec(ctx, rdb, []string{key}, nil).ToString(); err != nil || got != "1" {
		t.Fatalf("Exec = %q, %v; want 1", got, err)
	}
	drain := func() {
		select {
		case <-invalidated:
		default:
		}
	}
	from, to := c.Failover(t, int(slot.Of(key)))
	t.Logf("failed over from %s to %s", from, to)
	drain()
	// The client's map still names the demoted primary: this goes there
	// first and is redirected.
	if got, err := s.ExecTracked(ctx, rdb, []string{key}, nil).ToString(); err != nil || got != "1" {
		t.Fatalf("ExecTracked after the failover = %q, %v; want 1", got, err)
	}
	drain() // an invalidation of the tracking on the demoted node, if any
	if err := raw.Do(ctx, raw.B().Set().Key(key).Value("2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-invalidated:
	case <-time.After(2 * time.Second):
		t.Fatal("no invalidation of the key read by ExecTracked after a MOVED redirect: it was not tracked on the new primary")
	}
}

// TestExecTrackedReplies: ExecTracked returns the script's own reply, its
// error reply as a Redis error, and after the server lost its script cache
// runs it with EVAL; the key it read is tracked.
func TestExecTrackedReplies(t *testing.T) {
	r := redistest.Start(t)
	invalidated := make(chan string, 8)
	rdb := r.Client(t, func(o *rueidis.ClientOption) {
		o.OnInvalidations = func(ms []rueidis.RedisMessage) {
			for _, m := range ms {
				k, _ := m.ToString()
				invalidated <- k
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get := NewFrom("tracked_get", "return redis.call('get', KEYS[1])", false)
	fail := NewFrom("tracked_fail", "return redis.error_reply('FAIRRW_TEST refused')", false)
	if err := rdb.Do(ctx, rdb.B().Set().Key("k").Value("1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, rdb.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if got, err := get.ExecTracked(ctx, rdb, []string{"k"}, nil).ToString(); err != nil || got != "1" {
		t.Fatalf("ExecTracked after SCRIPT FLUSH = %q, %v; want 1", got, err)
	}
	err := fail.ExecTracked(ctx, rdb, []string{"k"}, nil).Error()
	if rerr, ok := rueidis.IsRedisErr(err); !ok || rerr.Error() != "FAIRRW_TEST refused" {
		t.Fatalf("ExecTracked of a failing script = %v, want its error reply", err)
	}
	if err := rdb.Do(ctx, rdb.B().Set().Key("k").Value("2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-invalidated:
		if k != "k" {
			t.Fatalf("invalidation of %q, want k", k)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the key read by ExecTracked was not tracked")
	}
}
