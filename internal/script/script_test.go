package script

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestExecBatchFallsBackToEval: after the server lost its script cache, a
// batch answered NOSCRIPT is sent again with EVAL, in the callers' order.
func TestExecBatchFallsBackToEval(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s := New("redisson_force_unlock", false)
	calls := []Call{
		{Keys: []string{"a", "redisson_rwlock:{a}"}, Args: []string{"read", "0", "publish"}},
		{Keys: []string{"b", "redisson_rwlock:{b}"}, Args: []string{"write", "1", "publish"}},
	}
	if err := c.Do(ctx, c.B().Hset().Key("b").FieldValue().FieldValue("mode", "write").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	results := s.ExecBatch(ctx, c, calls)
	want := []int64{0, 1}
	for i, r := range results {
		got, err := r.AsInt64()
		if err != nil || got != want[i] {
			t.Fatalf("call %d: %d, %v; want %d", i, got, err, want[i])
		}
	}
	if s.SHA1() == "" || s.Name() != "redisson_force_unlock" {
		t.Fatal("script identity")
	}
}
