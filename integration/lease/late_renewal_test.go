package lease

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestLateRenewalOutlivesUnlock: a watchdog renewal delayed in the network
// (held by a proxy), then an Unlock whose ctx ends while Redis is frozen.
// Lease.Unlock promises the release goes on in the background "until Redis
// confirms it or the hold has run out there". Delivered just before the
// lease's Deadline, the renewal extends the hold by a lease, while the
// release's copies, older than the accept window, change nothing. Found by
// an adversarial pass: a late copy's answer was taken for "not held", and
// the follow-up stopped at the old Deadline, leaving the lock held by
// nobody for another lease. A late copy's answer now says so (it is sent
// again with a new stamp), and a watchdog lease's follow-up lasts as long
// as a renewal may still land.
func TestLateRenewalOutlivesUnlock(t *testing.T) {
	r := redistest.StartProcess(t)
	for _, p := range []fairrw.Policy{fairrw.WriterPreferring(), fairrw.PhaseFair(), fairrw.Redisson()} {
		t.Run(p.String(), func(t *testing.T) {
			const lease = 3 * time.Second
			name := "late-renewal-" + p.String()
			px := itest.StartHoldProxy(t, r.Addr)
			opt := r.ClientOption()
			opt.InitAddress = []string{px.Addr()}
			c := itest.NewClientOn(t, opt, itest.Transports[1], fairrw.WithPolicy(p), fairrw.WithLeaseTime(lease), fairrw.WithUnlockTimeout(50*time.Millisecond))
			other := itest.NewClient(t, r, itest.Transports[1], fairrw.WithPolicy(p))
			raw := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
			l := itest.MustLock(t, c.RWMutex(name), fairrw.Write)
			// Let the first renewal through (it loads the script), hold the second.
			for d0 := l.Deadline(); l.Deadline().Equal(d0); {
				if time.Until(d0) < lease/3 {
					t.Fatal("the first renewal was not confirmed")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// A renewal names the owner, and not the queue or the latch an
			// acquire or a release names.
			px.Arm(func(b []byte) bool {
				return bytes.Contains(b, []byte(l.Owner())) && !bytes.Contains(b, []byte("queue")) && !bytes.Contains(b, []byte("latch"))
			})
			px.WaitHeld(t, 2*lease/3)
			dl := l.Deadline()
			r.Pause(t)
			paused := true
			defer func() {
				if paused {
					r.Resume(t)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			err := l.Unlock(ctx)
			cancel()
			t.Logf("Unlock while frozen: %v (Deadline %v away)", err, time.Until(l.Deadline()))
			// Just before the Deadline Redis resumes, and the held renewal
			// reaches it (a copy delayed in the network).
			time.Sleep(time.Until(dl.Add(-30 * time.Millisecond)))
			r.Resume(t)
			paused = false
			conn, err := net.Dial("tcp", r.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			px.Mu.Lock()
			_, werr := conn.Write(px.Held)
			px.Mu.Unlock()
			if werr != nil {
				t.Fatal(werr)
			}
			buf := make([]byte, 64)
			n, _ := conn.Read(buf)
			t.Logf("the late renewal's reply: %q", buf[:n])
			// Well past the lease's Deadline (and LeaseMargin), the lock must be free.
			// The background release is retried every quarter second at
			// most: it frees the lock soon after Redis resumes, whatever
			// the late renewal did, and well before another lease.
			time.Sleep(time.Until(dl))
			tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer tcancel()
			wctx, wcancel := context.WithTimeout(tctx, time.Second)
			defer wcancel()
			nl, err := other.RWMutex(name).Lock(wctx)
			if err != nil {
				info, _ := other.Inspect(tctx, name)
				keys, _ := raw.Do(tctx, raw.B().Keys().Pattern("*"+name+"*").Build()).AsStrSlice()
				t.Fatalf("%v after the unlocked lease's Deadline, the lock is still held: TryLock: %v; Inspect: %+v; keys %v", time.Since(dl), err, info, keys)
			}
			_ = nl.Unlock(tctx)
		})
	}
}
