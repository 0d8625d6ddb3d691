package integration

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// javaOwner writes and releases holds the way a Java Redisson client does,
// with raw commands: nothing of fairrw in between.
const javaOwner = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:1"

// TestJavaWriterWakesGoReaders: Go readers wait behind a Java writer and are
// woken by its unlock's "1" message, long before the hash's PTTL.
func TestJavaWriterWakesGoReaders(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			e := newWireEnv(t)
			n := "interop:java-writer:" + tr.name
			e.w.javaHolds(n, time.Minute, "mode", "write", compat.WriteField(javaOwner), "1")
			c := newClient(t, e.r, tr, fairrw.WithPolicy(fairrw.Redisson()))
			ch := make(chan *fairrw.Lease, 2)
			for range 2 {
				go func() {
					l, err := c.RWMutex(n).RLock(testCtx(t))
					if err != nil {
						t.Error(err)
					}
					ch <- l
				}()
			}
			waitSubscribers(t, e, compat.Channel(n), 1)
			// Java's write unlock: the hash goes, "1" is published.
			e.w.javaReleases(n, compat.Channel(n), compat.ReadUnlockMessage)
			for range 2 {
				select {
				case l := <-ch:
					if l == nil {
						t.FailNow()
					}
					if hidden.WokenBy(l) == "timer" {
						t.Errorf("reader woken by the PTTL timer, not by the release")
					}
					defer mustUnlock(t, l)
				case <-time.After(20 * time.Second):
					t.Fatal("Go readers still wait after the Java writer left (PTTL is 60s)")
				}
			}
		})
	}
}

// TestGoHoldsSeenByJavaScripts: Java's own acquire logic, run on the state a
// Go holder left, refuses and admits as Java would. Our read-acquire script
// is Redisson's algorithm; a Java owner id in it stands for a Java client.
func TestGoHoldsSeenByJavaScripts(t *testing.T) {
	e := newWireEnv(t)
	const n = "interop:go-writer"
	m := e.client(t).RWMutex(n)
	w := mustLock(t, m, fairrw.Write)
	javaRead := func() (int64, bool) {
		res := e.raw.Do(testCtx(t), e.raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_read_acquire")).Numkeys(6).
			Key(n, compat.LeaseKeyPrefix(n, javaOwner), fwire.OwnerMarker(n, javaOwner), fwire.Fair(n).State, fwire.Fence(n), fwire.Fair(n).Readers).
			Arg(args([]string{"30000", javaOwner, compat.WriteField(javaOwner)}, stamped(), []string{"0"})...).Build())
		reply, err := res.AsIntSlice()
		if err != nil || len(reply) != 2 {
			t.Fatalf("read acquire reply %v, %v", reply, err)
		}
		return reply[1], reply[0] == 0
	}
	if pttl, refused := javaRead(); !refused || pttl <= 0 {
		t.Fatalf("Java read beside a Go writer: refused=%v pttl=%d", refused, pttl)
	}
	mustUnlock(t, w)
	if _, refused := javaRead(); refused {
		t.Fatal("Java read refused on a free lock")
	}
	e.w.wantHash(n, map[string]string{"mode": "read", javaOwner: "1"})
	if _, err := m.TryLock(testCtx(t)); err == nil {
		t.Fatal("Go writer admitted beside a Java reader")
	}
}

func waitSubscribers(t *testing.T, e wireEnv, channel string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := e.raw.Do(testCtx(t), e.raw.B().PubsubNumsub().Channel(channel).Build()).ToArray()
		if err == nil && len(counts) == 2 {
			if got, _ := counts[1].AsInt64(); got >= n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never had %d subscribers", channel, n)
}

// TestUnlockByNonOwnerFails: another owner's unlock (Java's or a Go
// handle's) answers nil, "not held", and changes nothing.
func TestUnlockByNonOwnerFails(t *testing.T) {
	e := newWireEnv(t)
	const n = "interop:non-owner"
	m := e.client(t).RWMutex(n)
	w := mustLock(t, m, fairrw.Write)
	r := mustFurther(t, w, fairrw.Read) // the downgrade hold
	before := e.w.hash(n)
	writeUnlock := rwUnlock(e, n, javaOwner, "w", "11111111111111111111111111111111", 0, 0)
	readUnlock := rwUnlock(e, n, javaOwner, "r", "22222222222222222222222222222222", 0, 0)
	for _, res := range []interface{ Error() error }{writeUnlock, readUnlock} {
		if err := res.Error(); !rueidis.IsRedisNil(err) {
			t.Fatalf("unlock by a non-owner: %v, want nil (not held)", err)
		}
	}
	e.w.wantHash(n, before)
	if _, err := e.client(t).RWMutex(n).TryRLock(testCtx(t)); err == nil {
		t.Fatal("another owner read beside the write")
	}
	mustUnlock(t, r)
	mustUnlock(t, w)
}
