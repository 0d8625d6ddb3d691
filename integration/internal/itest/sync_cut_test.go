package itest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/faults"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/redis/rueidis"
)

// TestSyncGrantWithLostReplyInCut plays the faults the sync/granted-while-cut
// finding came after, with the replica already stopped: the attempt's grant
// is made, its reply lost (drop-reply) or its connection reset, and the
// retry finds the grant made. The retry's WAIT covers the grant (it runs
// behind the retry's script on the retry's connection, whose script writes,
// and Redis 7.0 waits for the offset a connection's last command left), so
// no Lease may come back while the replica is stopped: ErrNotReplicated.
// The WAITs sent are logged as the conformance diagnostic records them.
func TestSyncGrantWithLostReplyInCut(t *testing.T) {
	primary := redistest.StartProcess(t)
	admin := primary.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	start := time.Now()
	f := &confFaults{tb: t, start: start, counts: map[string]int{}, admins: []rueidis.Client{admin}}
	f.Replica = confStartReplica(t, primary, admin)
	o := newConfOracle("sync", start, f, time.Second)
	p := faults.StartProxy(t, primary.Addr)
	c, err := fairrw.New(fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{p.Addr()}, DisableCache: true}),
		fairrw.WithPolicy(fairrw.WriterPreferring()), fairrw.WithSyncReplicas(1, 80*time.Millisecond), fairrw.WithRedisWrapper(o.waits.wrap("c")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Load the script first: a lost reply is then the grant's, not NOSCRIPT's.
	l := lockWhileReplicaUp(t, ctx, c.RWMutex("warm"))
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"drop-reply", "reset"} {
		for _, mode := range []fairrw.Mode{fairrw.Write, fairrw.Read} {
			name := fault + "-" + mode.String()
			m := c.RWMutex(name)
			f.Replica.Pause(t)
			time.Sleep(20 * time.Millisecond)
			if fault == "drop-reply" {
				p.DropReplyMatching("EVALSHA")
			} else {
				go func() { time.Sleep(time.Millisecond); p.Reset() }()
			}
			from := time.Now()
			lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
			if mode == fairrw.Write {
				l, err = m.Lock(lctx)
			} else {
				l, err = m.RLock(lctx)
			}
			lcancel()
			to := time.Now()
			for _, r := range o.waits.overlapping(from, to) {
				t.Logf("%s: %s %s -> %s; %s -> %d %s", name, o.At(r.sent), r.script, r.reply, r.waitCmd, r.acked, r.waitErr)
			}
			f.Replica.Resume(t)
			if err == nil {
				t.Errorf("%s: a Lease (token %d) came back while the replica was stopped", name, l.Token())
				_ = l.Unlock(ctx)
			} else {
				t.Logf("%s: %v", name, err)
			}
			time.Sleep(200 * time.Millisecond) // the replica catches up
		}
	}
}

// lockWhileReplicaUp locks m, whose Client waits 80 ms for its replica,
// trying again when the replica, up, did not acknowledge within that:
// a loaded machine schedules it late (the checks concern a replica that
// is stopped, and the Lock here only sets them up).
func lockWhileReplicaUp(t *testing.T, ctx context.Context, m *fairrw.RWMutex) *fairrw.Lease {
	t.Helper()
	for try := 1; ; try++ {
		l, err := m.Lock(ctx)
		if err == nil {
			return l
		}
		if !errors.Is(err, fairrw.ErrNotReplicated) || try == 20 {
			t.Fatalf("Lock with the replica up, try %d: %v", try, err)
		}
		t.Logf("Lock with the replica up, try %d: %v; again", try, err)
	}
}
