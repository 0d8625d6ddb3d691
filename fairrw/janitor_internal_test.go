package fairrw

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/redis/rueidis"
)

// lossyClient sends its first DoMulti to Redis and then reports every
// command of it failed, as a connection lost after the write would.
// It records what each call was asked to send, before sending it.
type lossyClient struct {
	rueidis.Client
	calls atomic.Int32
	sent  [][]string
}

func (l *lossyClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	for _, c := range cmds {
		l.sent = append(l.sent, append([]string(nil), c.Commands()...))
	}
	res := l.Client.DoMulti(ctx, cmds...)
	if l.calls.Add(1) > 1 {
		return res
	}
	// Error results of the same count: a PING sent on a cancelled ctx.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	failed := make([]rueidis.RedisResult, len(res))
	for i := range failed {
		failed[i] = l.Client.Do(dead, l.Client.B().Ping().Build())
	}
	return failed
}

// TestJanitorRetryBuildsAgain: a batch of deletes that reports failure is
// sent once more, with commands built again (rueidis recycles a command
// once it is sent; sending it twice panicked), and the latches are gone.
func TestJanitorRetryBuildsAgain(t *testing.T) {
	mr, opt := redistest.Miniredis(t)
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	lossy := &lossyClient{Client: rdb}
	for _, k := range []string{"latch:a", "latch:b"} {
		if err := mr.Set(k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	j := &janitor{rdb: lossy, halt: context.Background()}
	j.delete([]string{"latch:a", "latch:b"})
	if n := lossy.calls.Load(); n != 2 {
		t.Fatalf("%d DoMulti calls, want 2 (the failed one and its retry)", n)
	}
	// A recycled command no longer holds what was built: the retry must
	// send the same DEL as the first try.
	var sent []string
	for _, c := range lossy.sent {
		sent = append(sent, strings.Join(c, " "))
	}
	half := len(sent) / 2
	first, retry := slices.Sorted(slices.Values(sent[:half])), slices.Sorted(slices.Values(sent[half:]))
	if half == 0 || !slices.Equal(first, retry) || !strings.HasPrefix(first[0], "DEL ") {
		t.Fatalf("sent %q; want the same DELs twice", sent)
	}
	for _, k := range []string{"latch:a", "latch:b"} {
		if mr.Exists(k) {
			t.Fatalf("%s left after the janitor's retry", k)
		}
	}
}

// TestJanitorDropAfterClose: a release that answers after Close (rueidis
// held it past Close's grace) may still drop its latch: the key is left to
// expire, and nothing panics. What was queued before close is deleted.
func TestJanitorDropAfterClose(t *testing.T) {
	mr, opt := redistest.Miniredis(t)
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := mr.Set("latch:queued", "1"); err != nil {
		t.Fatal(err)
	}
	j := newJanitor(rdb, context.Background())
	j.drop("latch:queued")
	j.close()
	j.drop("latch:late")
	if mr.Exists("latch:queued") {
		t.Fatal("a latch queued before close was not deleted")
	}
}
