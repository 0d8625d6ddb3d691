package fairrw

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestShardTable: a CLUSTER SLOTS answer maps every slot to its primary;
// miniredis answers as a one-node cluster serving all 16,384.
func TestShardTable(t *testing.T) {
	_, opt := redistest.Miniredis(t)
	opt.DisableCache = true
	opt.ForceSingleClient = true
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	msgs, err := rdb.Do(context.Background(), rdb.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	of := shardTable(msgs)
	if len(of) != 1<<14 {
		t.Fatalf("a table of %d slots", len(of))
	}
	for s, k := range of {
		if k != 1 {
			t.Fatalf("slot %d maps to %d, want 1 (the one primary)", s, k)
		}
	}
	if shardTable([]rueidis.RedisMessage{{}}) != nil {
		t.Fatal("an answer that does not parse made a table")
	}
	if shardTable(nil) != nil {
		t.Fatal("an answer serving no slot made a table")
	}
}
