package history

import (
	"fmt"

	"github.com/fairrw/rwlock/fairrw"
)

// CheckFencing checks the fencing tokens of each lock's holds, in order of
// their start:
//
//   - Writes: a write tenure is a run of write holds of one owner, each
//     starting before the run's latest end (a reentrant write keeps its
//     owner's token). Within a tenure tokens never decrease; each tenure's
//     tokens are strictly greater than every token of the tenures before it.
//   - Reads: a read hold's token is 0 or at least the token of every write
//     hold that started before it. A read is granted the lock's last token
//     while Redis keeps it, and 0 once it expired (it is kept a while only:
//     see fairrw.Lease.Token); a write of another owner that started
//     (returned) before a read did was granted before it: had the read been
//     granted first, the write could not have been granted until the
//     read's Unlock call, after the read's start. The write owner's own
//     reads are granted after its write, as a read is never upgraded.
//
// Only known holds are compared: a write whose acquire timed out may have
// minted a token too, so a read may see a token above every recorded write
// (that is allowed).
func CheckFencing(holds []Hold) []Violation {
	c := collector{kind: ViolationFencing}
	for _, lock := range byLock(holds) {
		checkTokens(lock, &c)
	}
	return c.result()
}

// tenure is the current run of write holds of one owner.
type tenure struct {
	last  Hold // the run's latest hold, for reports
	owner string
	end   Hold // the hold of the run with the latest end
	token uint64
}

// checkTokens checks one lock's holds, sorted by start.
func checkTokens(holds []Hold, c *collector) {
	var (
		cur      *tenure
		highest  uint64 // the highest token of earlier tenures
		maxWrite Hold   // the write with the highest token so far
	)
	for _, h := range holds {
		if h.Mode != fairrw.Write {
			if h.Token != 0 && h.Token < maxWrite.Token {
				c.add(Violation{
					Detail: fmt.Sprintf("lock %q: read token %d is below write token %d granted before it", h.Lock, h.Token, maxWrite.Token),
					Holds:  []Hold{maxWrite, h},
				})
			}
			continue
		}
		if cur != nil && cur.owner == h.Owner && h.From.Before(cur.end.To) {
			if h.Token < cur.token {
				c.add(Violation{
					Detail: fmt.Sprintf("lock %q: reentrant write token %d is below its tenure's %d", h.Lock, h.Token, cur.token),
					Holds:  []Hold{cur.last, h},
				})
			}
			cur.extend(h)
		} else {
			if cur != nil {
				highest = max(highest, cur.token)
			}
			if cur != nil && h.Token <= highest {
				c.add(Violation{
					Detail: fmt.Sprintf("lock %q: write token %d does not exceed %d, granted to an earlier write", h.Lock, h.Token, highest),
					Holds:  []Hold{maxWrite, h},
				})
			}
			cur = &tenure{last: h, owner: h.Owner, end: h, token: h.Token}
		}
		if h.Token >= maxWrite.Token {
			maxWrite = h
		}
	}
}

// extend adds a reentrant write hold to the tenure.
func (t *tenure) extend(h Hold) {
	t.last = h
	t.token = max(t.token, h.Token)
	if h.To.After(t.end.To) {
		t.end = h
	}
}
