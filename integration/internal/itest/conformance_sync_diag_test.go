package itest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	"github.com/redis/rueidis"
)

// TestSyncCutDiagnostic checks what a sync/granted-while-cut report now
// carries: the replica's acknowledged offset and process state at the
// cut's start and at the report, and the WAITs the synced Clients sent
// during the call, with their replies. A Lock under WithSyncReplicas while
// the replica is stopped fails with ErrNotReplicated; a hold made up from
// that call (as if it had been returned) is judged, and its report must
// show the stopped replica, an offset that did not move, and the call's
// WAIT answering 0.
func TestSyncCutDiagnostic(t *testing.T) {
	primary := redistest.StartProcess(t)
	admin := primary.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	start := time.Now()
	f := &confFaults{tb: t, start: start, counts: map[string]int{}, admins: []rueidis.Client{admin}}
	f.Replica = confStartReplica(t, primary, admin)
	o := newConfOracle("writer-preferring", start, f, time.Second)
	c, err := fairrw.New(fairrw.WithClientOption(primary.ClientOption()), fairrw.WithPolicy(fairrw.WriterPreferring()),
		fairrw.WithSyncReplicas(1, 80*time.Millisecond), fairrw.WithRedisWrapper(o.waits.wrap("c2")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := c.RWMutex("diag")
	l := lockWhileReplicaUp(t, ctx, m)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if recs := o.waits.overlapping(start, time.Now()); len(recs) == 0 || recs[len(recs)-1].acked != 1 {
		t.Fatalf("the WAIT of a Lock with the replica up: records %+v, want the last acknowledged by 1", recs)
	}

	f.Replica.Pause(t)
	defer f.Replica.Resume(t)
	paused := time.Now()
	cut := confCut{start: paused, probe: f.probeReplica(time.Second, true)}
	t.Logf("replica seen stopped %v after SIGSTOP", cut.probe.stopped.Sub(paused))
	if cut.probe.state != "T" || cut.probe.acked < 0 || cut.probe.master < 0 {
		t.Fatalf("probe after SIGSTOP: %+v, want state T and both offsets", cut.probe)
	}
	callStart := time.Now()
	_, err = m.Lock(ctx)
	granted := time.Now()
	if !errors.Is(err, fairrw.ErrNotReplicated) {
		t.Fatalf("Lock with the replica stopped: %v, want ErrNotReplicated", err)
	}
	f.cuts = append(f.cuts, &cut)
	h := &confHold{id: 1, Name: "diag", Owner: 1, wire: "x:1", mode: fairrw.Write, token: uint64(granted.UnixMicro()), op: "Lock", Client: "c2",
		callStart: callStart, granted: granted, synced: true}
	o.Mu.Lock()
	o.checkSyncLocked(h, time.Now())
	o.Mu.Unlock()
	if len(o.violations) != 1 {
		t.Fatalf("%d violations, want 1", len(o.violations))
	}
	report := o.violations[0].report
	t.Logf("%s", report)
	for _, want := range []string{
		"replica at the cut's start: at ", `replica process state "T"`, "replica now: at ",
		"synced round trips during the call (1):", "WAIT 1 80 -> 0",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(report, "not stopped") {
		t.Errorf("report says the stopped replica acknowledged more")
	}
}
