package wire

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fairrw/rwlock/internal/hidden"
)

// Mode is a hold's kind. Its values are fairrw.Mode's (Read 1, Write 2), so
// fairrw converts with wire.Mode(m): this package cannot name fairrw.Mode,
// since fairrw imports it.
type Mode uint8

const (
	// Read is a shared hold.
	Read Mode = iota + 1
	// Write is the exclusive hold.
	Write
)

// letter renders a mode as the fair scripts and the Redisson release take
// it: "r" for a read, "w" otherwise.
func (m Mode) letter() string {
	if m == Read {
		return "r"
	}
	return "w"
}

// The scripts' units, rendered in one place: every duration in whole
// milliseconds, every instant in Unix milliseconds, every flag as "1" or "0".

// HoldMillis is how long a hold must last in Redis, in milliseconds: d plus
// hidden.LeaseMargin, rounded up (so that Redis keeps every hold a little
// longer than its Lease's Deadline, and nobody is granted the lock before).
func HoldMillis(d time.Duration) string {
	return formatMillis(ceilMillis(d + hidden.LeaseMargin))
}

// ceilMillis is d in whole milliseconds, rounded up, at least 1.
func ceilMillis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}

// millis renders a lifetime or a window (not a hold) in whole milliseconds,
// truncated, at least 1 (Redis's resolution; PX refuses 0).
func millis(d time.Duration) string {
	return formatMillis(max(d.Milliseconds(), 1))
}

// msStrings remembers the decimal forms of the millisecond counts sent
// most: a Client sends the same lease, queue lease, window and latch
// lifetime on every call, and formatting a count above 99 allocates. It is
// direct-mapped by value (two counts that share a slot take turns in it);
// an entry is never changed once stored, so a reader sees a whole entry.
var msStrings [64]atomic.Pointer[msString]

type msString struct {
	ms int64
	s  string
}

// formatMillis returns ms in decimal, as strconv.FormatInt does.
func formatMillis(ms int64) string {
	if ms < 100 {
		return strconv.FormatInt(ms, 10) // never allocates
	}
	slot := &msStrings[uint64(ms)%uint64(len(msStrings))]
	if e := slot.Load(); e != nil && e.ms == ms {
		return e.s
	}
	s := strconv.FormatInt(ms, 10)
	slot.Store(&msString{ms: ms, s: s})
	return s
}

// stamp renders a send time as the scripts compare it with the server's
// clock: Unix milliseconds.
func stamp(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// flag renders a boolean as the scripts test it.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// count renders a count of holds (a further hold's count, a release's kept
// holds).
func count(n int) string { return strconv.Itoa(n) }
