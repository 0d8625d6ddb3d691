package itest

import (
	"testing"
	"time"
)

// javaOwner writes and releases holds the way a Java Redisson client does,
// with raw commands: nothing of fairrw in between.
const JavaOwner = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:1"

func WaitSubscribers(t *testing.T, e WireEnv, channel string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := e.Raw.Do(TestCtx(t), e.Raw.B().PubsubNumsub().Channel(channel).Build()).ToArray()
		if err == nil && len(counts) == 2 {
			if got, _ := counts[1].AsInt64(); got >= n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never had %d subscribers", channel, n)
}
