package fairrw

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// lockInfoJSON is LockInfo as JSON shows it: words for modes, durations in
// milliseconds, times in RFC 3339.
type lockInfoJSON struct {
	Name           string       `json:"name"`
	Policy         string       `json:"policy"`
	Time           time.Time    `json:"time"`
	Holders        []holderJSON `json:"holders"`
	WaitingWriters []waiterJSON `json:"waiting_writers"`
	WaitingReaders []waiterJSON `json:"waiting_readers"`
	Token          uint64       `json:"token"`
}

type holderJSON struct {
	Owner       string `json:"owner"`
	Mode        string `json:"mode"`
	Holds       int    `json:"holds"`
	RemainingMs int64  `json:"remaining_ms"`
}

type waiterJSON struct {
	Owner       string `json:"owner"`
	RemainingMs int64  `json:"remaining_ms"`
	LeaseMs     int64  `json:"lease_ms,omitempty"`
	Admitted    bool   `json:"admitted,omitempty"`
}

// MarshalJSON renders the lock's state, for an admin endpoint or a tool
// that reads it, with words for modes and milliseconds for durations:
//
//	{"name":"orders","policy":"writer-preferring","time":"...","holders":[{"owner":"...","mode":"write","holds":1,"remaining_ms":29876}],...}
func (i LockInfo) MarshalJSON() ([]byte, error) {
	out := lockInfoJSON{Name: i.Name, Policy: i.Policy, Time: i.Time, Token: i.Token,
		Holders: []holderJSON{}, WaitingWriters: []waiterJSON{}, WaitingReaders: []waiterJSON{}}
	for _, h := range i.Holders {
		out.Holders = append(out.Holders, holderJSON{h.Owner, h.Mode.String(), h.Holds, h.Remaining.Milliseconds()})
	}
	for _, w := range i.WaitingWriters {
		out.WaitingWriters = append(out.WaitingWriters, waiterJSON{w.Owner, w.Remaining.Milliseconds(), w.Lease.Milliseconds(), w.Admitted})
	}
	for _, w := range i.WaitingReaders {
		out.WaitingReaders = append(out.WaitingReaders, waiterJSON{w.Owner, w.Remaining.Milliseconds(), w.Lease.Milliseconds(), w.Admitted})
	}
	return json.Marshal(out)
}

// String renders the lock's state on one line, for logs:
//
//	orders (writer-preferring): write c:1 x1 29.9s; waiting writers c:2 (29.8s); token 1795633673094513
func (i LockInfo) String() string {
	var b strings.Builder
	policy := i.Policy
	if policy == "" {
		policy = "free"
	}
	fmt.Fprintf(&b, "%s (%s):", i.Name, policy)
	if len(i.Holders) == 0 {
		b.WriteString(" no holder")
	}
	for n, h := range i.Holders {
		sep := ","
		if n == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %s x%d %v", sep, h.Mode, h.Owner, h.Holds, h.Remaining.Round(time.Millisecond))
	}
	waiters := func(what string, ws []WaiterInfo) {
		if len(ws) == 0 {
			return
		}
		fmt.Fprintf(&b, "; %s", what)
		for _, w := range ws {
			fmt.Fprintf(&b, " %s (%v)", w.Owner, w.Remaining.Round(time.Millisecond))
		}
	}
	waiters("waiting writers", i.WaitingWriters)
	waiters("waiting readers", i.WaitingReaders)
	if i.Token != 0 {
		fmt.Fprintf(&b, "; token %d", i.Token)
	}
	return b.String()
}
