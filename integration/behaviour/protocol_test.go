package behaviour

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/hidden"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// protocolPairs are the (holding, refused) protocol pairs: the version
// before this one and this one, both ways, and this one and a later one.
var protocolPairs = [][2]int{
	{1, fwire.Protocol}, {fwire.Protocol, 1}, {fwire.Protocol, fwire.Protocol + 1}, {fwire.Protocol + 1, fwire.Protocol},
}

func protocolClient(t *testing.T, e *itest.BadEnv, p fairrw.Policy, v int) *fairrw.Client {
	return e.Client(t, p, hidden.WithProtocol(v).(fairrw.Option))
}

// TestProtocolsNeverShareALock: for every fair policy and protocol pair, a
// write, a read, or a waiting writer of one protocol makes the other's
// Lock, RLock and their Try forms fail with ErrPolicyMismatch naming the
// holder's protocol, and leaves the keyspace as it was; when the lock is
// free again the other protocol takes it, and then refuses the first.
func TestProtocolsNeverShareALock(t *testing.T) {
	e := itest.NewBadEnv(t)
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		for _, pair := range protocolPairs {
			t.Run(fmt.Sprintf("%s/%d-holds-%d-asks", p, pair[0], pair[1]), func(t *testing.T) {
				e.Flush(t)
				holder, other := protocolClient(t, e, p, pair[0]), protocolClient(t, e, p, pair[1])
				name := "protocol:" + p.String()
				for _, held := range []string{"write", "read", "queued writer"} {
					ctx := itest.TestCtx(t)
					var leases []*fairrw.Lease
					w := itest.MustLock(t, holder.RWMutex(name), fairrw.Write)
					leases = append(leases, w)
					switch held {
					case "read":
						r := itest.MustFurther(t, w, fairrw.Read) // a downgrade: the read outlives the write
						if err := w.Unlock(ctx); err != nil {
							t.Fatal(err)
						}
						leases = []*fairrw.Lease{r}
					case "queued writer":
						// A writer of the holder's protocol waits behind w, in
						// Redis's queue: from another Client (one of the
						// holder's own would wait in its cohort).
						queuer := protocolClient(t, e, p, pair[0])
						queued := make(chan error, 1)
						qctx, cancel := context.WithCancel(ctx)
						defer cancel()
						go func() {
							l, err := queuer.RWMutex(name).Lock(qctx)
							if err == nil {
								err = l.Unlock(context.Background())
							}
							queued <- err
						}()
						waitQueued(t, holder, name)
						defer func() {
							cancel()
							if err := <-queued; err != nil && !errors.Is(err, context.Canceled) {
								t.Errorf("the queued writer: %v", err)
							}
						}()
					}
					before := settled(t, e)
					for _, try := range protocolTries {
						err := try.run(ctx, other.RWMutex(name))
						if !errors.Is(err, fairrw.ErrPolicyMismatch) {
							t.Fatalf("%s while a %s of protocol %d holds: %v, want ErrPolicyMismatch", try.name, held, pair[0], err)
						}
						if want := fmt.Sprintf("protocol %d", pair[0]); pair[0] != fwire.Protocol && !strings.Contains(err.Error(), want) {
							t.Fatalf("%s: %q does not name %q", try.name, err, want)
						}
					}
					if after := e.Snapshot(t).Without("redisson_unlock_latch"); !reflect.DeepEqual(before, after) {
						t.Fatalf("refused acquires of protocol %d changed Redis:\nbefore %v\nafter  %v", pair[1], before, after)
					}
					for _, l := range leases {
						if err := l.Unlock(ctx); err != nil {
							t.Fatal(err)
						}
					}
				}
				// The lock is free once the holder's queued writer is gone:
				// the other protocol takes it, and refuses the first.
				waitFree(t, e, name)
				l := itest.MustLock(t, other.RWMutex(name), fairrw.Write)
				if _, err := holder.RWMutex(name).TryRLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrPolicyMismatch) {
					t.Fatalf("protocol %d's read while protocol %d writes: %v, want ErrPolicyMismatch", pair[0], pair[1], err)
				}
				if err := l.Unlock(itest.TestCtx(t)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

var protocolTries = []struct {
	name string
	run  func(context.Context, *fairrw.RWMutex) error
}{
	{"TryLock", func(ctx context.Context, m *fairrw.RWMutex) error { return unlockIfHeld(m.TryLock(ctx)) }},
	{"TryRLock", func(ctx context.Context, m *fairrw.RWMutex) error { return unlockIfHeld(m.TryRLock(ctx)) }},
	{"Lock", func(ctx context.Context, m *fairrw.RWMutex) error { return unlockIfHeld(m.Lock(ctx)) }},
	{"RLock", func(ctx context.Context, m *fairrw.RWMutex) error { return unlockIfHeld(m.RLock(ctx)) }},
}

// unlockIfHeld gives back a lease granted where none should have been, so
// that the failure the caller reports is the only one.
func unlockIfHeld(l *fairrw.Lease, err error) error {
	if err == nil {
		_ = l.Unlock(context.Background())
		return errors.New("granted")
	}
	return err
}

// settled returns the keyspace once two snapshots 50ms apart agree: a
// waiter tries once more right after it subscribes, which refreshes its
// queue entry after Inspect first showed it.
func settled(t *testing.T, e *itest.BadEnv) itest.Keyspace {
	t.Helper()
	prev := e.Snapshot(t).Without("redisson_unlock_latch")
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		cur := e.Snapshot(t).Without("redisson_unlock_latch")
		if reflect.DeepEqual(prev, cur) {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("the keyspace still changes 5s after the holders settled:\n%v\n%v", prev, cur)
		}
		prev = cur
	}
}

// waitQueued waits until c's Inspect shows a waiting writer on name.
func waitQueued(t *testing.T, c *fairrw.Client, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if info := itest.Inspect(t, c, name); len(info.WaitingWriters) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiting writer on %s after 10s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFree waits until no key of name's fair state is left but its
// fencing token.
func waitFree(t *testing.T, e *itest.BadEnv, name string) {
	t.Helper()
	fk := fwire.Fair(name)
	waitKeysGone(t, e.Raw, 10*time.Second, fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted)
}

// TestProtocolReadsOutliveTheirRecord: the one case where a lock of one
// protocol does not refuse the other: only reads hold it, and the state
// that records policy and protocol expired (it covers the first read's
// lease; renewals extend the readers' own key). The other protocol is not
// refused then, but it sees the reads: a writer is not granted beside them,
// and gets the lock once they end.
func TestProtocolReadsOutliveTheirRecord(t *testing.T) {
	e := itest.NewBadEnv(t)
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair()} {
		t.Run(p.String(), func(t *testing.T) {
			e.Flush(t)
			name := "protocol:outlive:" + p.String()
			old := e.Client(t, p, hidden.WithProtocol(1).(fairrw.Option), fairrw.WithLeaseTime(300*time.Millisecond))
			cur := e.Client(t, p)
			r := itest.MustLock(t, old.RWMutex(name), fairrw.Read)
			waitStateGone(t, e.Raw, name, 5*time.Second)
			if _, err := cur.RWMutex(name).TryLock(itest.TestCtx(t)); !errors.Is(err, fairrw.ErrNotAcquired) {
				t.Fatalf("a write of protocol %d beside a live read of protocol 1: %v, want ErrNotAcquired", fwire.Protocol, err)
			}
			ctx, cancel := context.WithTimeout(itest.TestCtx(t), 300*time.Millisecond)
			defer cancel()
			if l, err := cur.RWMutex(name).Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
				_ = unlockIfHeld(l, err)
				t.Fatalf("a write of protocol %d waiting beside a live read: %v, want its deadline", fwire.Protocol, err)
			}
			select {
			case <-r.Done():
				t.Fatalf("the read lost its lease: %v", r.Err())
			default:
			}
			if err := r.Unlock(itest.TestCtx(t)); err != nil {
				t.Fatal(err)
			}
			w := itest.MustLock(t, cur.RWMutex(name), fairrw.Write)
			if err := w.Unlock(itest.TestCtx(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
