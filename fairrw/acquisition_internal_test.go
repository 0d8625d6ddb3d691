package fairrw

import (
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/wait"
)

// TestGrantedBy: a grant delivered to a waiter counts only when it was made
// after the waiter's last refused attempt (its token is above the server's
// clock at that refusal), and a watchdog lease's hold is counted from that
// attempt's send. A lease of its own (WithLease) or replicas to wait for
// take the grant up with an attempt instead, so that the lease counts from
// the grant.
func TestGrantedBy(t *testing.T) {
	m := &RWMutex{c: &Client{conf: settings{leaseTime: 30 * time.Second}}}
	// A registry closed before anyone joins starts no subscription, so it
	// needs no Redis: the grants come as a release's reply delivers them.
	r := wait.NewRegistry(wait.Config{Closing: make(chan struct{})})
	r.Close()
	keys := &wait.Keys{Channel: "ch", Format: wait.FairFormat}
	ws := []*wait.Waiter{r.Join(keys, wait.Write, "c:1")}
	refused := time.Now().Add(-time.Second)
	a := &acquisition{m: m, w: ws[0], cfg: acquireConfig{lease: 30 * time.Second}, refused: refused, refusedUs: 500}
	if _, ok := a.grantedBy(); ok {
		t.Fatal("granted with no grant delivered")
	}
	r.Deliver(keys, "c:1", 400) // a grant older than the refusal (at 500µs)
	if _, ok := a.grantedBy(); ok {
		t.Fatal("a stale grant, made before the last refusal, counted")
	}
	r.Deliver(keys, "c:1", 600)
	got, ok := a.grantedBy()
	if !ok || got.reply.token != 600 || !got.reply.granted {
		t.Fatalf("grantedBy = %+v, %v; want token 600", got, ok)
	}
	if !got.sent.Equal(refused) || got.cover != a.cfg.lease {
		t.Fatalf("hold counted from %v for %v; want from the refusal's send for the lease", got.sent, got.cover)
	}
	noRefusal := *a
	noRefusal.refused = time.Time{}
	if _, ok := noRefusal.grantedBy(); ok {
		t.Fatal("granted with no refused attempt to count the hold from")
	}
	for name, b := range map[string]acquisition{
		"WithLease":        {m: m, w: ws[0], cfg: acquireConfig{lease: 10 * time.Second, explicit: true}, refused: refused, refusedUs: 500},
		"WithLease long":   {m: m, w: ws[0], cfg: acquireConfig{lease: time.Minute, explicit: true}, refused: refused, refusedUs: 500},
		"WithSyncReplicas": {m: &RWMutex{c: &Client{conf: settings{leaseTime: 30 * time.Second, syncReplicas: 1}}}, w: ws[0], cfg: acquireConfig{lease: 30 * time.Second}, refused: refused, refusedUs: 500},
	} {
		if _, ok := b.grantedBy(); ok {
			t.Errorf("%s: a grant was used without taking it up", name)
		}
	}
}
