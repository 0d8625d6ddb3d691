package history

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/fairrw/rwlock/fairrw"
)

// Input is the model's input for one Op (porcupine.Operation.Input); the
// output is the Op's Outcome.
type Input struct {
	Lock  string
	Owner string
	Mode  fairrw.Mode
	Kind  Kind
	// Ends is whether a Release ends a hold: false for a Release of a
	// lease already ended (lost, or unlocked before).
	Ends bool
}

// state is one lock's state: the write owner and its write holds, and the
// read holds by owner. Step never mutates a state; it copies it.
type state struct {
	writer  string
	writes  int
	readers map[string]int
}

// Model returns the sequential model of one read-write lock (per lock name:
// the model partitions by name), for safety only: which waiter is admitted
// next is not modelled, so an acquire may always be Refused.
//
//   - A write is granted (OK) only if no one else holds the lock and the
//     owner holds no read without the write (a read is never upgraded);
//     the write owner may take it again if reentrant.
//   - A read is granted only if no other owner holds the write (the write
//     owner may read: a downgrade); an owner may hold several reads if
//     reentrant.
//   - A Release that ends a hold is OK only if the owner holds that mode;
//     Refused or Unknown, it ends the hold if there is one (Redis had lost
//     it, or the unlock failed: either way the lease is over). A Release of
//     an ended lease must not be OK. A Lost op ends a hold that must exist.
//   - An Unknown acquire is applied if it could be granted, and ignored
//     otherwise; CheckLinearizable gives it a return time after every other
//     op, so porcupine may also place it last, where it has no effect.
//
// Holds are counted per owner and mode. With reentrant false an owner may
// hold each mode once (it may still read under its write).
func Model(reentrant bool) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByLock,
		Init:      func() any { return state{} },
		Step: func(s, in, out any) (bool, any) {
			return step(s.(state), in.(Input), out.(Outcome), reentrant)
		},
		Equal:                     func(a, b any) bool { return a.(state).equal(b.(state)) },
		Hash:                      func(s any) uint64 { return s.(state).hash() },
		DescribeOperation:         describeOperation,
		DescribeState:             func(s any) string { return s.(state).String() },
		DescribeOperationMetadata: func(m any) string { return fmt.Sprint(m) },
	}
}

func step(s state, in Input, out Outcome, reentrant bool) (bool, any) {
	switch in.Kind {
	case Acquire:
		can := s.canAcquire(in.Owner, in.Mode, reentrant)
		switch {
		case out == OK && !can:
			return false, s
		case out == OK, out == Unknown && can:
			return true, s.add(in.Owner, in.Mode, 1)
		default: // Refused, or Unknown and it could not have been granted
			return true, s
		}
	case Release, Lost:
		held := s.count(in.Owner, in.Mode) > 0
		switch {
		case in.Kind == Release && !in.Ends:
			return out != OK, s
		case held:
			return true, s.add(in.Owner, in.Mode, -1)
		default: // nothing to end: only a refused (or unknown) Unlock is right
			return in.Kind == Release && out != OK, s
		}
	}
	return false, s
}

func (s state) canAcquire(owner string, mode fairrw.Mode, reentrant bool) bool {
	if mode == fairrw.Write {
		if s.writes > 0 {
			return reentrant && s.writer == owner
		}
		return len(s.readers) == 0
	}
	if s.writes > 0 && s.writer != owner {
		return false
	}
	return reentrant || s.readers[owner] == 0
}

func (s state) count(owner string, mode fairrw.Mode) int {
	if mode == fairrw.Write {
		if s.writer == owner {
			return s.writes
		}
		return 0
	}
	return s.readers[owner]
}

// add returns s with owner's holds of mode changed by delta.
func (s state) add(owner string, mode fairrw.Mode, delta int) state {
	if mode == fairrw.Write {
		s.writer, s.writes = owner, s.writes+delta
		if s.writes == 0 {
			s.writer = ""
		}
		return s
	}
	readers := maps.Clone(s.readers)
	if readers == nil {
		readers = make(map[string]int)
	}
	readers[owner] += delta
	if readers[owner] == 0 {
		delete(readers, owner)
	}
	s.readers = readers
	return s
}

func (s state) equal(o state) bool {
	return s.writer == o.writer && s.writes == o.writes && maps.Equal(s.readers, o.readers)
}

func (s state) hash() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", s.writer, s.writes)
	sum := h.Sum64()
	for owner, n := range s.readers { // order-independent
		r := fnv.New64a()
		fmt.Fprintf(r, "%s/%d", owner, n)
		sum ^= r.Sum64()
	}
	return sum
}

// String describes the state for the visualization.
func (s state) String() string {
	var b strings.Builder
	if s.writes > 0 {
		fmt.Fprintf(&b, "write: %s x%d; ", s.writer, s.writes)
	}
	owners := slices.Sorted(maps.Keys(s.readers))
	reads := make([]string, len(owners))
	for i, o := range owners {
		reads[i] = fmt.Sprintf("%s x%d", o, s.readers[o])
	}
	fmt.Fprintf(&b, "reads: {%s}", strings.Join(reads, ", "))
	return b.String()
}

func describeOperation(in, out any) string {
	i := in.(Input)
	if i.Kind == Release && !i.Ends {
		return fmt.Sprintf("%s %s %s (ended) -> %s", i.Owner, i.Kind, i.Mode, out)
	}
	return fmt.Sprintf("%s %s %s -> %s", i.Owner, i.Kind, i.Mode, out)
}

// partitionByLock splits a history by lock name, in name order.
func partitionByLock(ops []porcupine.Operation) [][]porcupine.Operation {
	groups := make(map[string][]porcupine.Operation)
	for _, op := range ops {
		lock := op.Input.(Input).Lock
		groups[lock] = append(groups[lock], op)
	}
	names := slices.Sorted(maps.Keys(groups))
	out := make([][]porcupine.Operation, len(names))
	for i, name := range names {
		out[i] = groups[name]
	}
	return out
}
