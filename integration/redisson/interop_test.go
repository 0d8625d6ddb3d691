package redisson

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/lua"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// TestJavaWriterWakesGoReaders: Go readers wait behind a Java writer and are
// woken by its unlock's "1" message, long before the hash's PTTL.
func TestJavaWriterWakesGoReaders(t *testing.T) {
	for _, tr := range itest.Transports {
		t.Run(tr.Name, func(t *testing.T) {
			e := itest.NewWireEnv(t)
			n := "interop:java-writer:" + tr.Name
			e.W.JavaHolds(n, time.Minute, "mode", "write", compat.WriteField(itest.JavaOwner), "1")
			c := itest.NewClient(t, e.R, tr, fairrw.WithPolicy(fairrw.Redisson()))
			ch := make(chan *fairrw.Lease, 2)
			for range 2 {
				go func() {
					l, err := c.RWMutex(n).RLock(itest.TestCtx(t))
					if err != nil {
						t.Error(err)
					}
					ch <- l
				}()
			}
			itest.WaitSubscribers(t, e, compat.Channel(n), 1)
			// Java's write unlock: the hash goes, "1" is published.
			e.W.JavaReleases(n, compat.Channel(n), compat.ReadUnlockMessage)
			for range 2 {
				select {
				case l := <-ch:
					if l == nil {
						t.FailNow()
					}
					if hidden.WokenBy(l) == "timer" {
						t.Errorf("reader woken by the PTTL timer, not by the release")
					}
					defer itest.MustUnlock(t, l)
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
	e := itest.NewWireEnv(t)
	const n = "interop:go-writer"
	m := e.Client(t).RWMutex(n)
	w := itest.MustLock(t, m, fairrw.Write)
	javaRead := func() (int64, bool) {
		res := e.Raw.Do(itest.TestCtx(t), e.Raw.B().Eval().Script(lua.Compose("common", "redisson_lib", "redisson_read_acquire")).Numkeys(6).
			Key(n, compat.LeaseKeyPrefix(n, itest.JavaOwner), fwire.OwnerMarker(n, itest.JavaOwner), fwire.Fair(n).State, fwire.Fence(n), fwire.Fair(n).Readers).
			Arg(itest.Args([]string{"30000", itest.JavaOwner, compat.WriteField(itest.JavaOwner)}, itest.Stamped(), []string{"0"})...).Build())
		reply, err := res.AsIntSlice()
		if err != nil || len(reply) != 2 {
			t.Fatalf("read acquire reply %v, %v", reply, err)
		}
		return reply[1], reply[0] == 0
	}
	if pttl, refused := javaRead(); !refused || pttl <= 0 {
		t.Fatalf("Java read beside a Go writer: refused=%v pttl=%d", refused, pttl)
	}
	itest.MustUnlock(t, w)
	if _, refused := javaRead(); refused {
		t.Fatal("Java read refused on a free lock")
	}
	e.W.WantHash(n, map[string]string{"mode": "read", itest.JavaOwner: "1"})
	if _, err := m.TryLock(itest.TestCtx(t)); err == nil {
		t.Fatal("Go writer admitted beside a Java reader")
	}
}

// TestUnlockByNonOwnerFails: another owner's unlock (Java's or a Go
// handle's) answers nil, "not held", and changes nothing.
func TestUnlockByNonOwnerFails(t *testing.T) {
	e := itest.NewWireEnv(t)
	const n = "interop:non-owner"
	m := e.Client(t).RWMutex(n)
	w := itest.MustLock(t, m, fairrw.Write)
	r := itest.MustFurther(t, w, fairrw.Read) // the downgrade hold
	before := e.W.Hash(n)
	writeUnlock := itest.RwUnlock(e, n, itest.JavaOwner, "w", "11111111111111111111111111111111", 0, 0)
	readUnlock := itest.RwUnlock(e, n, itest.JavaOwner, "r", "22222222222222222222222222222222", 0, 0)
	for _, res := range []interface{ Error() error }{writeUnlock, readUnlock} {
		if err := res.Error(); !rueidis.IsRedisNil(err) {
			t.Fatalf("unlock by a non-owner: %v, want nil (not held)", err)
		}
	}
	e.W.WantHash(n, before)
	if _, err := e.Client(t).RWMutex(n).TryRLock(itest.TestCtx(t)); err == nil {
		t.Fatal("another owner read beside the write")
	}
	itest.MustUnlock(t, r)
	itest.MustUnlock(t, w)
}
