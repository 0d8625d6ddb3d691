package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/faults"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// confAdminName is the client name of the harness's own connections, which
// CLIENT KILL spares.
const ConfAdminName = "conformance-admin"

// confProxy is a fault proxy between some Clients and one server.
type confProxy struct {
	P      *faults.Proxy
	label  string
	Server int

	// Guarded by confFaults.mu.
	stalled bool
	drop    *confFault // an armed drop not yet seen to fire
	dropped int        // the proxy's drop count when it was armed
}

// confFault is one injected fault; end is zero while it is in progress
// (a stall or pause not yet healed, a drop armed but not yet fired).
type confFault struct {
	Kind, target, detail string
	start, end           time.Time
}

// confFaults injects faults and keeps their history.
type confFaults struct {
	tb      testing.TB
	start   time.Time
	Servers []*redistest.Redis
	admins  []rueidis.Client
	proxies []*confProxy
	pauses  bool // may pause servers (one at a time)
	// replica, when set, replicates server 0 for the Clients under
	// WithSyncReplicas; a "replica-cut" pauses it (SIGSTOP), so that no
	// acknowledgement comes until it resumes.
	Replica *redistest.Redis

	Mu      sync.Mutex
	hist    []*confFault
	counts  map[string]int
	lastEnd time.Time
	paused  int // servers paused now
	async   sync.WaitGroup
	cuts    []*confCut // the replica's pauses, guarded by mu
	cutNow  bool       // the replica is paused
}

// confCut is one pause of the replica: from start (SIGSTOP sent, and a
// margin for it to take effect) to end (just before SIGCONT; zero while it
// lasts), no acknowledgement can come from it.
type confCut struct {
	start, end time.Time
	probe      confReplicaProbe // the replica right after the stop (conformance_sync_diag.go)
}

// cutsCopy returns the replica's pauses so far (end zero: in progress).
func (f *confFaults) cutsCopy() []confCut {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := make([]confCut, len(f.cuts))
	for i, c := range f.cuts {
		out[i] = *c
	}
	return out
}

// overlaps reports whether a fault of one of kinds (any kind when none is
// given) was in progress at some moment of [from, to]; a fault still in
// progress counts from its start on.
func (f *confFaults) overlaps(from, to time.Time, kinds ...string) bool {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, x := range f.hist {
		if x.start.After(to) || (!x.end.IsZero() && x.end.Before(from)) {
			continue
		}
		if len(kinds) == 0 {
			return true
		}
		for _, k := range kinds {
			if x.Kind == k {
				return true
			}
		}
	}
	return false
}

// firedWithin reports whether a fault was in progress at some moment of
// [from, to], counting an armed drop only from shortly before it was seen
// to fire (an armed drop changes nothing until then), and not at all
// while it has not.
func (f *confFaults) firedWithin(from, to time.Time) bool {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, x := range f.hist {
		start := x.start
		if x.Kind == "drop-reply" {
			if x.end.IsZero() {
				continue
			}
			start = x.end.Add(-100 * time.Millisecond)
		}
		if start.After(to) || (!x.end.IsZero() && x.end.Before(from)) {
			continue
		}
		return true
	}
	return false
}

// lastEndOverlapping returns the latest end of the faults in progress at
// some moment of [from, to], and whether one of them is still in progress.
func (f *confFaults) lastEndOverlapping(from, to time.Time) (end time.Time, ongoing bool) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, x := range f.hist {
		if x.start.After(to) || (!x.end.IsZero() && x.end.Before(from)) {
			continue
		}
		if x.end.IsZero() {
			ongoing = true
		} else if x.end.After(end) {
			end = x.end
		}
	}
	return end, ongoing
}

func (f *confFaults) beginLocked(kind, target, detail string) *confFault {
	x := &confFault{Kind: kind, target: target, detail: detail, start: time.Now()}
	f.hist = append(f.hist, x)
	f.counts[kind]++
	return x
}

func (f *confFaults) finishLocked(x *confFault) {
	x.end = time.Now()
	if x.end.After(f.lastEnd) {
		f.lastEnd = x.end
	}
}

// state reports whether a fault is in progress and when the last one ended.
func (f *confFaults) state() (active bool, lastEnd time.Time) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for i := len(f.hist) - 1; i >= 0; i-- {
		if f.hist[i].end.IsZero() {
			return true, f.lastEnd
		}
	}
	return false, f.lastEnd
}

// quietFor reports whether no fault is in progress and none ended within d.
func (f *confFaults) quietFor(d time.Duration) bool {
	active, last := f.state()
	return !active && time.Since(last) >= d
}

// history lists the faults in progress at now or ended within window
// before it.
func (f *confFaults) history(now time.Time, window time.Duration, indent string) string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var b strings.Builder
	for _, x := range f.hist {
		if x.start.After(now) || (!x.end.IsZero() && x.end.Before(now.Add(-window))) {
			continue
		}
		end := "in progress"
		if !x.end.IsZero() {
			end = fmt.Sprintf("ended +%.3fs", x.end.Sub(f.start).Seconds())
		}
		fmt.Fprintf(&b, "%s+%.3fs %s %s %s (%s)\n", indent, x.start.Sub(f.start).Seconds(), x.Kind, x.target, x.detail, end)
	}
	if b.Len() == 0 {
		return indent + "(none)\n"
	}
	return b.String()
}

func (f *confFaults) summary() string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	total := 0
	for _, n := range f.counts {
		total += n
	}
	return fmt.Sprintf("total=%d %s", total, confSorted(f.counts))
}

// poll finishes the armed drops that fired.
func (f *confFaults) poll() {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, p := range f.proxies {
		if p.drop == nil {
			continue
		}
		if _, dropped := p.P.Stats(); dropped > p.dropped {
			f.finishLocked(p.drop)
			p.drop = nil
		}
	}
}

// run injects faults until ctx ends: bursts of 3-4s with a fault every
// 150-500ms, then quiet phases of 5.5-7s in which the liveness and
// stranded-hold checks can run.
func (f *confFaults) run(ctx context.Context, rng *rand.Rand) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	burstEnd := time.Time{}
	nextPhase := time.Now().Add(1500 * time.Millisecond) // quiet warm-up
	next := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.poll()
		now := time.Now()
		if now.After(nextPhase) {
			burst := 3*time.Second + time.Duration(rng.Int64N(int64(time.Second)))
			burstEnd = now.Add(burst)
			nextPhase = burstEnd.Add(5500*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond))))
			next = now
		}
		if now.Before(burstEnd) && !now.Before(next) {
			f.inject(ctx, rng)
			next = now.Add(150*time.Millisecond + time.Duration(rng.Int64N(int64(350*time.Millisecond))))
		}
	}
}

// inject starts one random fault.
func (f *confFaults) inject(ctx context.Context, rng *rand.Rand) {
	type choice struct {
		Kind   string
		weight int
	}
	choices := []choice{{"script-flush", 12}, {"client-kill", 14}}
	if len(f.proxies) > 0 {
		choices = append(choices, choice{"drop-reply", 30}, choice{"stall", 16}, choice{"reset", 14}, choice{"late-copy", 20})
	}
	if f.pauses {
		choices = append(choices, choice{"pause", 10}, choice{"freeze", 14})
	}
	if f.Replica != nil {
		choices = append(choices, choice{"replica-cut", 24})
	}
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	r := rng.IntN(total)
	kind := ""
	for _, c := range choices {
		if r < c.weight {
			kind = c.Kind
			break
		}
		r -= c.weight
	}
	if kind == "script-flush" || kind == "client-kill" {
		f.redisFault(ctx, rng, kind)
		return
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	switch kind {
	case "drop-reply":
		p := f.proxies[rng.IntN(len(f.proxies))]
		if p.drop != nil {
			return
		}
		_, p.dropped = p.P.Stats()
		p.drop = f.beginLocked(kind, p.label, "reply to the next EVALSHA lost after it ran")
		p.P.DropReplyMatching("EVALSHA")
	case "stall":
		p := f.proxies[rng.IntN(len(f.proxies))]
		if p.stalled {
			return
		}
		d := 100*time.Millisecond + time.Duration(rng.Int64N(int64(800*time.Millisecond)))
		x := f.beginLocked(kind, p.label, fmt.Sprintf("for %v then Heal", d.Round(time.Millisecond)))
		p.stalled = true
		p.P.Stall()
		f.async.Add(1)
		go func() {
			defer f.async.Done()
			time.Sleep(d)
			f.Mu.Lock()
			p.P.Heal()
			p.stalled = false
			f.finishLocked(x)
			f.Mu.Unlock()
		}()
	case "late-copy":
		// The next script call is held back on a connection the client
		// sees break; the client's retry runs at once, the held copy later,
		// mostly within the accept window (twice the unlock timeout).
		p := f.proxies[rng.IntN(len(f.proxies))]
		d := 50*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))
		x := f.beginLocked(kind, p.label, fmt.Sprintf("next EVALSHA held back, delivered %v later", d.Round(time.Millisecond)))
		p.P.DelayMatching("EVALSHA", d)
		f.async.Add(1)
		go func() {
			defer f.async.Done()
			time.Sleep(d + 200*time.Millisecond)
			f.Mu.Lock()
			f.finishLocked(x)
			f.Mu.Unlock()
		}()
	case "reset":
		p := f.proxies[rng.IntN(len(f.proxies))]
		x := f.beginLocked(kind, p.label, "every connection reset")
		p.P.Reset()
		f.finishLocked(x)
	case "replica-cut":
		// The replica stops acknowledging: a grant under WithSyncReplicas
		// made meanwhile must fail with ErrNotReplicated.
		if f.cutNow {
			return
		}
		d := 150*time.Millisecond + time.Duration(rng.Int64N(int64(550*time.Millisecond)))
		x := f.beginLocked(kind, "replica", fmt.Sprintf("SIGSTOP for %v", d.Round(time.Millisecond)))
		f.cutNow = true
		f.Replica.Pause(f.tb)
		// SIGSTOP takes effect at once but is delivered asynchronously: the
		// cut counts from a little later.
		c := &confCut{start: time.Now().Add(10 * time.Millisecond)}
		f.cuts = append(f.cuts, c)
		f.async.Add(1)
		go func() {
			defer f.async.Done()
			// Only this goroutine resumes the replica: it is stopped
			// while this reads it.
			p := f.probeReplica(d/2, true)
			f.Mu.Lock()
			c.probe = p
			f.Mu.Unlock()
			time.Sleep(time.Until(c.start.Add(d - 10*time.Millisecond))) // d from the stop
			f.Mu.Lock()
			c.end = time.Now()
			f.Replica.Resume(f.tb)
			f.cutNow = false
			f.Mu.Unlock()
			// The cut ends at the resume; the fault, once the replica
			// has caught up (a grant that waits for it cannot be
			// confirmed before), outside f.Mu (see redisFault).
			synced := waitReplicaSynced(context.Background(), f.admins[0], 15*time.Second)
			f.Mu.Lock()
			x.detail += "; " + synced
			f.finishLocked(x)
			f.Mu.Unlock()
		}()
	case "pause", "freeze":
		// A pause outlasts the unlock timeout; a freeze is a few hundred
		// ms, during which calls with a deadline must still return on time.
		if f.paused > 0 {
			return
		}
		i := rng.IntN(len(f.Servers))
		d := 400*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))
		if kind == "freeze" {
			d = 150*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		}
		x := f.beginLocked(kind, fmt.Sprintf("redis%d", i), fmt.Sprintf("SIGSTOP for %v (unlock timeout %v)", d.Round(time.Millisecond), confUnlockTimeout))
		f.paused++
		f.Servers[i].Pause(f.tb)
		f.async.Add(1)
		go func() {
			defer f.async.Done()
			time.Sleep(d)
			f.Mu.Lock()
			f.Servers[i].Resume(f.tb)
			f.paused--
			f.finishLocked(x)
			f.Mu.Unlock()
		}()
	}
}

// redisFault injects a fault made by Redis calls (SCRIPT FLUSH, CLIENT
// KILL) on a random server. The calls run without f.Mu, which the oracle
// takes under its own lock to ask whether a fault is in progress: held
// across a call that a loaded machine's Redis answers a second late, it
// kept every worker from recording its calls for that long (a Lock
// recorded as called 3.6 s after its ctx was made).
func (f *confFaults) redisFault(ctx context.Context, rng *rand.Rand, kind string) {
	f.Mu.Lock()
	if f.paused > 0 {
		f.Mu.Unlock()
		return
	}
	i := rng.IntN(len(f.Servers))
	x := f.beginLocked(kind, fmt.Sprintf("redis%d", i), "")
	f.Mu.Unlock()
	var detail string
	if kind == "client-kill" {
		detail = f.killClients(ctx, rng, i)
	} else {
		detail = "SCRIPT FLUSH"
		c, cancel := context.WithTimeout(ctx, time.Second)
		if err := faults.ScriptFlush(c, f.Servers[i].Addr); err != nil {
			detail += " failed: " + err.Error()
		}
		cancel()
	}
	f.Mu.Lock()
	x.detail = detail
	f.finishLocked(x)
	f.Mu.Unlock()
}

// killClients kills a random half (at least one) of the Clients'
// connections to server i with CLIENT KILL ID.
func (f *confFaults) killClients(ctx context.Context, rng *rand.Rand, i int) string {
	admin := f.admins[i]
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	list, err := admin.Do(c, admin.B().ClientList().Build()).ToString()
	if err != nil {
		return "CLIENT LIST failed: " + err.Error()
	}
	var ids []string
	replicas := map[string]bool{} // the replicas' links, by id
	for _, line := range strings.Split(list, "\n") {
		if line == "" || strings.Contains(line, " name="+ConfAdminName+" ") {
			continue
		}
		var id string
		replica := false
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(field, "flags="); ok && strings.Contains(v, "S") {
				replica = true
			}
		}
		if id != "" {
			ids = append(ids, id)
			replicas[id] = replica
		}
	}
	if len(ids) == 0 {
		return "no connection to kill"
	}
	rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
	ids = ids[:1+rng.IntN(len(ids))]
	killed, replicaKilled := 0, false
	for _, id := range ids {
		if n, err := admin.Do(c, admin.B().Arbitrary("CLIENT", "KILL", "ID", id).Build()).AsInt64(); err == nil {
			killed += int(n)
			replicaKilled = replicaKilled || (n > 0 && replicas[id])
		}
	}
	detail := fmt.Sprintf("CLIENT KILL ID: %d connections killed", killed)
	if replicaKilled {
		// The replica's link was among them: until it is back and caught
		// up, a grant that waits for the replica (WithSyncReplicas) cannot
		// be confirmed, and that is the fault's doing. It lasts until then
		// (a replica reconnects from a once-a-second cron; on a loaded
		// machine it took seconds).
		detail += ", the replica's link among them; " + waitReplicaSynced(ctx, admin, 15*time.Second)
	}
	return detail
}

// waitReplicaSynced waits, at most d, until the primary that admin
// speaks to has a replica online that acknowledged what the primary had
// when the wait began (the writes go on meanwhile: its offset need not
// reach the primary's latest), and says how long that took.
func waitReplicaSynced(ctx context.Context, admin rueidis.Client, d time.Duration) string {
	start := time.Now()
	var target int64 = -1 // the primary's offset when the wait began
	for time.Since(start) < d && ctx.Err() == nil {
		c, cancel := context.WithTimeout(ctx, time.Second)
		info, err := admin.Do(c, admin.B().Info().Section("replication").Build()).ToString()
		cancel()
		if err == nil {
			var offset, replicaOffset string
			online := false
			for _, line := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
					offset = v
				}
				if v, ok := strings.CutPrefix(line, "slave0:"); ok {
					for _, kv := range strings.Split(v, ",") {
						if kv == "state=online" {
							online = true
						}
						if o, ok := strings.CutPrefix(kv, "offset="); ok {
							replicaOffset = o
						}
					}
				}
			}
			o, oerr := strconv.ParseInt(offset, 10, 64)
			ro, rerr := strconv.ParseInt(replicaOffset, 10, 64)
			if target < 0 && oerr == nil {
				target = o
			}
			if online && target >= 0 && rerr == nil && ro >= target {
				return fmt.Sprintf("the replica in sync again after %v", time.Since(start).Round(time.Millisecond))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("the replica not in sync within %v", d)
}

// stop waits for the stalls and pauses in progress to heal, heals every
// proxy and fires the drops still armed (an EVALSHA of a raw client through
// the proxy takes the drop), so that nothing is pending once it returns.
func (f *confFaults) stop() {
	f.async.Wait()
	for _, p := range f.proxies {
		p.P.Heal()
	}
	for _, p := range f.proxies {
		f.Mu.Lock()
		armed := p.drop != nil
		f.Mu.Unlock()
		if !armed {
			continue
		}
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.P.Addr()}, DisableCache: true, ClientName: ConfAdminName})
		if err == nil {
			for range 5 {
				c, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = rc.Do(c, rc.B().Evalsha().Sha1("0000000000000000000000000000000000000000").Numkeys(0).Build()).Error()
				cancel()
				f.poll()
				f.Mu.Lock()
				armed = p.drop != nil
				f.Mu.Unlock()
				if !armed {
					break
				}
			}
			rc.Close()
		}
		f.Mu.Lock()
		if p.drop != nil {
			p.drop.detail += " (never fired)"
			f.finishLocked(p.drop)
			p.drop = nil
		}
		f.Mu.Unlock()
	}
}
