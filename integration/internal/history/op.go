package history

import (
	"fmt"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// Kind is what an Op did.
type Kind uint8

const (
	// Acquire is a Lock, RLock, TryLock or TryRLock.
	Acquire Kind = iota + 1
	// Release is an Unlock.
	Release
	// Lost is synthetic: the lease ended without an Unlock (its Done closed
	// before Unlock was called). The model treats it as the release of that
	// hold, at that moment.
	Lost
)

// String returns "acquire", "release" or "lost".
func (k Kind) String() string {
	switch k {
	case Acquire:
		return "acquire"
	case Release:
		return "release"
	case Lost:
		return "lost"
	default:
		return fmt.Sprintf("Kind(%d)", uint8(k))
	}
}

// MarshalText writes the Kind as its String, for readable JSON histories.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Outcome is what the caller learnt of an Op's effect.
type Outcome uint8

const (
	// OK: acquired, or released.
	OK Outcome = iota + 1
	// Refused: not acquired (ErrNotAcquired, or an invalid call that sent
	// nothing), or not held at release (ErrNotHeld).
	Refused
	// Unknown: the call failed in a way that may or may not have taken
	// effect in Redis (a context deadline, a lost connection, a Client
	// closing under it).
	Unknown
)

// String returns "ok", "refused" or "unknown".
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case Unknown:
		return "unknown"
	default:
		return fmt.Sprintf("Outcome(%d)", uint8(o))
	}
}

// MarshalText writes the Outcome as its String, for readable JSON histories.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// An Op is one recorded operation on a lock.
type Op struct {
	Owner   string      // the owner acquiring or holding: Lease.Owner()
	Lock    string      // the lock name
	Mode    fairrw.Mode // the mode asked for, or of the lease released
	Kind    Kind
	Call    time.Time // when the call was made
	Return  time.Time // when it returned
	Outcome Outcome
	// Token is the lease's fencing token (an Acquire with Outcome OK, and
	// the Lost and Release ops of that lease).
	Token uint64
	// Deadline is the lease's local deadline at grant (an Acquire with
	// Outcome OK).
	Deadline time.Time
	// Lease ties the Acquire, Release and Lost ops of one lease together
	// (a Recorder numbers leases from 1); 0 for an op of no known lease.
	// Of a lease's Release and Lost ops, the first recorded ends the hold;
	// later ones (an Unlock after a loss, a second Unlock) end nothing.
	Lease uint64
	// Err is the error text of a failed call, for the reader of a report.
	Err string `json:",omitempty"`
}

// String describes the op in one line, for reports.
func (op Op) String() string {
	s := fmt.Sprintf("%s %s %s %q %s -> %s [%s .. %s]", op.Owner, op.Kind, op.Mode, op.Lock,
		leaseTag(op.Lease), op.Outcome, op.Call.Format(timeFormat), op.Return.Format(timeFormat))
	if op.Token != 0 {
		s += fmt.Sprintf(" token %d", op.Token)
	}
	if op.Err != "" {
		s += ": " + op.Err
	}
	return s
}

// A Hold is a lease's believed-held interval: from its grant (the Return of
// its acquire) to the earlier of its Unlock call and the moment its Done
// closed (a lease lost before Unlock), or to the end of the history for a
// lease still held then.
type Hold struct {
	Owner string
	Lock  string
	Mode  fairrw.Mode
	From  time.Time
	To    time.Time
	Token uint64
}

// String describes the hold in one line, for reports.
func (h Hold) String() string {
	return fmt.Sprintf("%s %s %q token %d [%s .. %s]", h.Owner, h.Mode, h.Lock, h.Token,
		h.From.Format(timeFormat), h.To.Format(timeFormat))
}

const timeFormat = "15:04:05.000000"

func leaseTag(id uint64) string {
	if id == 0 {
		return "lease ?"
	}
	return fmt.Sprintf("lease %d", id)
}
