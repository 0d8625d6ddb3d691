package itest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// advOracle judges exclusion by each Lease's local view: a Lease counts as
// held from its grant until its holder removes it (just before Unlock), its
// Done closes or its Deadline passes. Write tokens must increase in grant
// order (writes are serial under exclusion, so record order is grant order).
type AdvOracle struct {
	Mu      sync.Mutex
	live    map[*fairrw.Lease]string // lease -> who
	last    uint64
	lastWho string
	Grants  int
	errs    []string
}

func NewAdvOracle() *AdvOracle { return &AdvOracle{live: map[*fairrw.Lease]string{}} }

func AdvHeld(l *fairrw.Lease, now time.Time) bool {
	select {
	case <-l.Done():
		return false
	default:
	}
	return now.Before(l.Deadline())
}

func (o *AdvOracle) Grant(l *fairrw.Lease, mode fairrw.Mode, who string) {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	now := time.Now()
	o.Grants++
	for other, ow := range o.live {
		if !AdvHeld(other, now) {
			delete(o.live, other)
			continue
		}
		if mode == fairrw.Write || modeOf(ow) == fairrw.Write {
			o.errs = append(o.errs, fmt.Sprintf("%s (token %d) granted while %s (token %d) holds until %v",
				who, l.Token(), ow, other.Token(), time.Until(other.Deadline())))
		}
	}
	if mode == fairrw.Write {
		if l.Token() <= o.last {
			o.errs = append(o.errs, fmt.Sprintf("%s token %d not above %s's %d", who, l.Token(), o.lastWho, o.last))
		}
		o.last, o.lastWho = l.Token(), who
	}
	o.live[l] = who + "/" + mode.String()
}

func modeOf(who string) fairrw.Mode {
	if len(who) > 5 && who[len(who)-5:] == "write" {
		return fairrw.Write
	}
	return fairrw.Read
}

func (o *AdvOracle) Release(l *fairrw.Lease) {
	o.Mu.Lock()
	delete(o.live, l)
	o.Mu.Unlock()
}

// grantUnlock records l's grant and release, and unlocks it.
func (o *AdvOracle) grantUnlock(t *testing.T, ctx context.Context, l *fairrw.Lease, who string) {
	t.Helper()
	o.Grant(l, fairrw.Write, who)
	o.Release(l)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func (o *AdvOracle) Check(t *testing.T) {
	t.Helper()
	o.Mu.Lock()
	defer o.Mu.Unlock()
	for i, e := range o.errs {
		if i == 10 {
			t.Errorf("... and %d more", len(o.errs)-10)
			break
		}
		t.Error(e)
	}
}

type AdvResult struct {
	L   *fairrw.Lease
	Err error
	At  time.Time
}

// advLock starts m.Lock on a goroutine and returns its outcome's channel.
func AdvLock(ctx context.Context, m *fairrw.RWMutex, opts ...fairrw.AcquireOption) <-chan AdvResult {
	ch := make(chan AdvResult, 1)
	go func() {
		l, err := m.Lock(ctx, opts...)
		ch <- AdvResult{l, err, time.Now()}
	}()
	return ch
}

func AdvRecv(t *testing.T, ch <-chan AdvResult, within time.Duration, what string) AdvResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("%s: no answer within %v", what, within)
		return AdvResult{}
	}
}

// runtimeYield spins a little, to vary the interleaving.
func RuntimeYield(n int) {
	for range n * 200 {
		_ = time.Now()
	}
}

// finalWrites has each Client take the write once more after a storm or a
// fault and unlock it, checked by o: no hold, cohort or waiter is left
// stuck.
func (o *AdvOracle) FinalWrites(t *testing.T, name string, clients []*fairrw.Client) {
	t.Helper()
	ctx := TestCtx(t)
	for ci, c := range clients {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := c.RWMutex(name).Lock(lctx)
		cancel()
		if err != nil {
			info, _ := c.Inspect(ctx, name)
			t.Fatalf("client %d: Lock after the storm: %v (something stuck? %+v)", ci, err, info)
		}
		o.grantUnlock(t, ctx, l, fmt.Sprintf("c%d/final/write", ci))
	}
	o.Check(t)
}
