package fairness

import (
	"sync"
	"time"
)

// Class is the kind of a request: a read or a write.
type Class uint8

const (
	// Reader is a request for a shared (read) hold.
	Reader Class = iota + 1
	// Writer is a request for an exclusive (write) hold.
	Writer
)

// String returns "reader" or "writer".
func (c Class) String() string {
	switch c {
	case Reader:
		return "reader"
	case Writer:
		return "writer"
	default:
		return "invalid"
	}
}

// Request is one acquire call as the caller saw it.
type Request struct {
	Class Class
	// Client is the index of the lock owner (a worker with its own handle)
	// within its class, from 0: the x_i of Jain's index are per Client.
	Client int
	// Asked is when the caller asked (before any connection was taken).
	Asked time.Time
	// Wait is granted minus asked; for a timed-out request, its timeout.
	Wait time.Duration
	// TimedOut marks a request that was never granted.
	TimedOut bool
	// Woken is what ended a granted request's wait (Lease.WokenBy): ""
	// when it was granted without waiting.
	Woken string
}

// Granted returns when the request was granted, and false for a request
// that timed out (never granted).
func (r Request) Granted() (time.Time, bool) {
	if r.TimedOut {
		return time.Time{}, false
	}
	return r.Asked.Add(r.Wait), true
}

// Recorder collects Requests from many goroutines. The zero value is ready.
type Recorder struct {
	mu   sync.Mutex
	reqs []Request
}

// Grant records a request asked at asked and granted at granted.
func (r *Recorder) Grant(class Class, client int, asked, granted time.Time) {
	r.Add(Request{Class: class, Client: client, Asked: asked, Wait: granted.Sub(asked)})
}

// Timeout records a request asked at asked that was not granted within
// timeout: it counts at its timeout.
func (r *Recorder) Timeout(class Class, client int, asked time.Time, timeout time.Duration) {
	r.Add(Request{Class: class, Client: client, Asked: asked, Wait: timeout, TimedOut: true})
}

// Add records q.
func (r *Recorder) Add(q Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, q)
	r.mu.Unlock()
}

// Requests returns a copy of the requests of class, in the order recorded.
func (r *Recorder) Requests(class Class) []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Request
	for _, q := range r.reqs {
		if q.Class == class {
			out = append(out, q)
		}
	}
	return out
}

// Len returns the number of requests recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}
