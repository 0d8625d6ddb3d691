package history

import (
	"fmt"
	"sort"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// Kinds of Violation of the fair policies' order (CheckWriterFIFO,
// CheckPhaseFairAdmission).
const (
	ViolationFIFO      = "fifo"
	ViolationPhaseFair = "phase-fair"
)

// A WriteGrant is a granted write acquire (a first hold: Lock or TryLock)
// as the order checks see it. Write tokens are minted in Redis in grant
// order, so Token orders the grants as Redis made them, whenever the
// acquires returned.
type WriteGrant struct {
	Owner  string // any label unique to the acquire
	Lock   string
	Call   time.Time // the acquire's call
	Return time.Time // its return, with the grant
	Token  uint64
	// KeepsPlace marks a Lock (never a TryLock) that nothing could have
	// cost its place in the queue but the lock's own order: its caller
	// knows no fault, no stop of its Client and no give-back (a grant
	// answered after a lease too short to outlast it) around its wait.
	KeepsPlace bool
	// Lead, when above the check's gap, is how long this write's first
	// attempt may take from its call to Redis: longer for a Client that
	// sends each attempt with its WAIT on a dedicated connection, which it
	// may have to dial first (WithSyncReplicas).
	Lead time.Duration
	// EndsAfter is a lower bound on the end of the owner's write in Redis:
	// the earliest of its Unlock call, its Deadline, its Client's stop and
	// any ForceUnlock that may have hit it (zero: not known, as when the
	// owner took further writes; never used as the write a reader waited
	// for).
	EndsAfter time.Time
}

func (w WriteGrant) op() Op {
	return Op{Owner: w.Owner, Lock: w.Lock, Mode: fairrw.Write, Kind: Acquire, Call: w.Call, Return: w.Return, Outcome: OK, Token: w.Token}
}

// CheckWriterFIFO checks that writers are served in the order they queued
// (WriterPreferring and PhaseFair): of two write grants a and b of one
// lock where a KeepsPlace and b's call began at least gap (or a's Lead,
// if longer) after a's (so that a's first attempt reached Redis, and
// queued a, before b's did), a was granted first (a lower token). A
// TryLock b is never granted ahead of a queued writer either. gap stands
// for the time from a call to its first attempt reaching Redis; the
// caller picks it well above that.
func CheckWriterFIFO(writes []WriteGrant, gap time.Duration) []Violation {
	c := collector{kind: ViolationFIFO}
	groups := map[string][]WriteGrant{}
	for _, w := range writes {
		groups[w.Lock] = append(groups[w.Lock], w)
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := groups[n]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Call.Before(g[j].Call) })
		for i, a := range g {
			if !a.KeepsPlace {
				continue
			}
			lead := max(gap, a.Lead)
			for _, b := range g[i+1:] {
				if b.Call.Sub(a.Call) < lead || b.Owner == a.Owner || b.Token >= a.Token {
					continue
				}
				c.add(Violation{
					Detail: fmt.Sprintf("lock %q: writer %s called %v before writer %s, which was granted first (token %d < %d)",
						a.Lock, a.Owner, b.Call.Sub(a.Call).Round(time.Millisecond), b.Owner, b.Token, a.Token),
					Ops: []Op{a.op(), b.op()},
				})
			}
		}
	}
	return c.result()
}

// A WaitingRead is a granted RLock whose hold Redis kept past the RLock's
// return (its caller knows its lease outlasts the reply's way back, and
// no fault or stop cut it short): every write granted after it in Redis
// returned after it.
type WaitingRead struct {
	Owner  string
	Lock   string
	Call   time.Time
	Return time.Time
}

// CheckPhaseFairAdmission checks PhaseFair's promise that the readers
// waiting when a write ends (however it ends) enter before the next
// writer: for a read r and a write w1 of another owner that ended (in
// Redis) no earlier than lead after r's call, no write w2 granted after
// w1 (a higher token) may return before r. By then r's first attempt had
// reached Redis: either it was granted (and w1, then w2, only after r
// left), or it was refused and r waited, and was admitted when w1 ended,
// ahead of w2, which could only be granted once r had entered and left,
// after r's return. lead stands for the time from a call to its first
// attempt reaching Redis.
func CheckPhaseFairAdmission(writes []WriteGrant, reads []WaitingRead, lead time.Duration) []Violation {
	c := collector{kind: ViolationPhaseFair}
	byLock := map[string][]WriteGrant{}
	for _, w := range writes {
		byLock[w.Lock] = append(byLock[w.Lock], w)
	}
	for _, r := range reads {
		ws := byLock[r.Lock]
		for _, w1 := range ws {
			if w1.Owner == r.Owner || w1.EndsAfter.IsZero() || !w1.Return.Before(r.Return) || w1.EndsAfter.Before(r.Call.Add(lead)) {
				continue
			}
			var first *WriteGrant
			for i := range ws {
				w2 := &ws[i]
				if w2.Owner == r.Owner || w2.Owner == w1.Owner || w2.Token <= w1.Token || !w2.Return.Before(r.Return) {
					continue
				}
				if first == nil || w2.Token < first.Token {
					first = w2
				}
			}
			if first != nil {
				c.add(Violation{
					Detail: fmt.Sprintf("lock %q: reader %s was called %v before write %s ended, yet write %s (token %d, after %d) was granted and returned %v before the reader",
						r.Lock, r.Owner, w1.EndsAfter.Sub(r.Call).Round(time.Millisecond), w1.Owner, first.Owner, first.Token, w1.Token,
						r.Return.Sub(first.Return).Round(time.Millisecond)),
					Ops: []Op{w1.op(), {Owner: r.Owner, Lock: r.Lock, Mode: fairrw.Read, Kind: Acquire, Call: r.Call, Return: r.Return, Outcome: OK}, first.op()},
				})
			}
		}
	}
	return c.result()
}
