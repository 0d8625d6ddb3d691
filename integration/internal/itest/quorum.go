package itest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// quorumUnlockTimeout bounds the Unlock (and the give-back of a late grant)
// on a node that is down or paused: it retries until then.
const QuorumUnlockTimeout = time.Second

// quorumNodes are independent redis-server processes, the nodes of a
// quorum, each with a raw client for inspection.
type QuorumNodes struct {
	Servers []*redistest.Redis
	raws    []rueidis.Client
}

// startQuorumNodes starts n redis-server processes, killed at cleanup.
func StartQuorumNodes(t *testing.T, n int) *QuorumNodes {
	t.Helper()
	qn := &QuorumNodes{}
	for range n {
		r := redistest.StartProcess(t)
		qn.Servers = append(qn.Servers, r)
		qn.raws = append(qn.raws, r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true }))
	}
	return qn
}

// quorum returns a Quorum over every node, as one process would build it:
// Clients of its own (one per node, over tr, with opts), closed at cleanup
// after the Quorum (cleanups run last in first out).
func (qn *QuorumNodes) Quorum(t *testing.T, tr Transport, qopts []fairrw.QuorumOption, opts ...fairrw.Option) *fairrw.Quorum {
	t.Helper()
	opts = append([]fairrw.Option{fairrw.WithUnlockTimeout(QuorumUnlockTimeout)}, opts...)
	clients := make([]*fairrw.Client, len(qn.Servers))
	for i, r := range qn.Servers {
		clients[i] = NewClientOn(t, r.ClientOption(), tr, opts...)
	}
	q, err := fairrw.NewQuorum(clients, qopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// kill SIGKILLs the nodes at idx.
func (qn *QuorumNodes) Kill(t *testing.T, idx ...int) {
	t.Helper()
	for _, i := range idx {
		qn.Servers[i].Kill(t)
	}
}

// lockKeys lists the keys on node i other than the last fencing tokens and
// owner markers that expire on their own (with a TTL: see expiring).
func (qn *QuorumNodes) lockKeys(t *testing.T, i int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := qn.raws[i].Do(ctx, qn.raws[i].B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS on node %d: %v", i, err)
	}
	var out []string
	for _, k := range keys {
		if !expiring(t, qn.raws[i], k) {
			out = append(out, k)
		}
	}
	return out
}

// expectNoLockKeys fails t unless, within a few seconds, no node in idx
// holds a key other than a last fencing token or an owner marker with a
// TTL. Close the Quorums first: Close waits for the give-backs still
// running. The wait is for unlock latches (which expire within the unlock
// timeout) that commands queued to a paused node wrote once it resumed.
func (qn *QuorumNodes) ExpectNoLockKeys(t *testing.T, idx ...int) {
	t.Helper()
	deadline := time.Now().Add(QuorumUnlockTimeout + 2*time.Second)
	for _, i := range idx {
		for {
			keys := qn.lockKeys(t, i)
			if len(keys) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("node %d: keys left: %s", i, qn.describe(t, i, keys))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// describe lists keys of node i with their PTTL, for failure reports.
func (qn *QuorumNodes) describe(t *testing.T, i int, keys []string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		pttl, err := qn.raws[i].Do(context.Background(), qn.raws[i].B().Pttl().Key(k).Build()).AsInt64()
		fmt.Fprintf(&b, "%q (pttl %d, %v) ", k, pttl, err)
	}
	return b.String()
}
