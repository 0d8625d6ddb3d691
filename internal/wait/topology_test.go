package wait

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestProbeEcho: a group whose subscription was lost is suspect until one
// of its own probes comes back on the channel; then every waiter retries.
// A probe, its own or another Client's, is no release: it wakes no one
// else, under any policy.
func TestProbeEcho(t *testing.T) {
	for _, p := range []struct {
		name   string
		format Format
	}{{"redisson", JavaFormat}, {"writer-preferring", FairFormat}, {"phase-fair", FairFormat}} {
		t.Run(p.name, func(t *testing.T) {
			r, g, ws := testGroup(p.format, Write, Read)
			r.lostSubscription(g, false)
			if g.suspectSince.IsZero() || g.probing {
				t.Fatalf("after a loss: suspect since %v, probing %v; want suspect, no prober (no ctx)", g.suspectSince, g.probing)
			}
			wantWoken(t, ws, false, false)
			g.probes = []string{newProbe()}
			r.onMessage(g, newProbe()) // another Client's
			wantWoken(t, ws, false, false)
			if g.suspectSince.IsZero() {
				t.Fatal("another Client's probe ended the suspicion")
			}
			r.onMessage(g, g.probes[0])
			wantWoken(t, ws, true, true)
			if !g.suspectSince.IsZero() || g.probes != nil {
				t.Fatal("the group's own probe did not end the suspicion")
			}
			r.onMessage(g, newProbe()) // late, or another's: nothing
			wantWoken(t, ws, false, false)
		})
	}
}

// TestLostSubscriptionWakes: a subscription lost with its connection wakes
// every waiter (they retry, then take short naps until it is back); one the
// server ended does not (it is made again at once, and its confirmation
// wakes them).
func TestLostSubscriptionWakes(t *testing.T) {
	r, g, ws := testGroup(FairFormat, Write, Read)
	r.lostSubscription(g, false)
	wantWoken(t, ws, false, false)
	r.lostSubscription(g, true)
	wantWoken(t, ws, true, true)
	r.onSubscription(g, rueidis.PubSubSubscription{Kind: "ssubscribe"}) // the first
	wantWoken(t, ws, false, false)
	r.onSubscription(g, rueidis.PubSubSubscription{Kind: "ssubscribe"}) // made again
	wantWoken(t, ws, true, true)
}

// TestUnsettledFirstSubscription: in a Client that lost a subscription
// lately, a new group's first subscription is suspect too; otherwise not.
func TestUnsettledFirstSubscription(t *testing.T) {
	r, g, _ := testGroup(JavaFormat, Write)
	r.onSubscription(g, rueidis.PubSubSubscription{Kind: "subscribe"})
	if !g.suspectSince.IsZero() {
		t.Fatal("a first subscription in a settled Client is suspect")
	}
	r, g, _ = testGroup(JavaFormat, Write)
	r.unsettledUntil = time.Now().Add(time.Second)
	r.onSubscription(g, rueidis.PubSubSubscription{Kind: "subscribe"})
	if g.suspectSince.IsZero() {
		t.Fatal("a first subscription made just after a loss is not suspect")
	}
}

// TestNapBound: a suspect group's waiters sleep suspectMinNap at first, up
// to suspectMaxNap as the suspicion ages, and never longer than asked.
func TestNapBound(t *testing.T) {
	_, g, ws := testGroup(FairFormat, Write)
	w := ws[0]
	if got := w.NapBound(10 * time.Second); got != 10*time.Second {
		t.Fatalf("NapBound not suspect = %v, want the bound", got)
	}
	for _, c := range []struct {
		age, bound, want time.Duration
	}{
		{0, 10 * time.Second, suspectMinNap},
		{0, 50 * time.Millisecond, 50 * time.Millisecond},
		{10 * time.Minute, 10 * time.Second, suspectMaxNap},
	} {
		g.suspectSince = time.Now().Add(-c.age)
		if got := w.NapBound(c.bound); got != c.want {
			t.Errorf("NapBound(%v) suspect for %v = %v, want %v", c.bound, c.age, got, c.want)
		}
	}
	g.suspectSince = time.Now().Add(-500 * time.Millisecond)
	if got := w.NapBound(10 * time.Second); got < 500*time.Millisecond || got > suspectMaxNap {
		t.Errorf("NapBound suspect for 500ms = %v, want between 500ms and %v", got, suspectMaxNap)
	}
}
