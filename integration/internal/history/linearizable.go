package history

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// operations turns ops into porcupine operations: times in nanoseconds from
// the first call, one client id per owner, an Unknown op returning after
// every other op (it may take effect at any time after its call, or never),
// a Release marked as ending a hold unless an earlier op of its lease did,
// and the Op with its index in ops as Metadata.
func operations(ops []Op) []porcupine.Operation {
	if len(ops) == 0 {
		return nil
	}
	start, last := ops[0].Call, ops[0].Return
	for _, op := range ops {
		if op.Call.Before(start) {
			start = op.Call
		}
		if op.Return.After(last) {
			last = op.Return
		}
	}
	never := last.Sub(start).Nanoseconds() + 1
	clients := make(map[string]int)
	ended := make(map[uint64]bool)
	out := make([]porcupine.Operation, 0, len(ops))
	for i, op := range ops {
		// A refused acquire is legal in every state and changes none: it
		// cannot decide the answer, only multiply the orders to try.
		if op.Kind == Acquire && op.Outcome == Refused {
			continue
		}
		if _, ok := clients[op.Owner]; !ok {
			clients[op.Owner] = len(clients)
		}
		in := Input{Lock: op.Lock, Owner: op.Owner, Mode: op.Mode, Kind: op.Kind}
		if op.Kind != Acquire {
			in.Ends = op.Lease == 0 || !ended[op.Lease]
			ended[op.Lease] = true
		}
		ret := op.Return.Sub(start).Nanoseconds()
		if op.Outcome == Unknown {
			ret = never
		}
		out = append(out, porcupine.Operation{
			ClientId: clients[op.Owner], Input: in, Output: op.Outcome,
			Call: op.Call.Sub(start).Nanoseconds(), Return: ret, Metadata: opRef{i, op},
		})
	}
	return out
}

// opRef is a porcupine operation's Metadata: the Op and its index in the
// history.
type opRef struct {
	index int
	op    Op
}

// String labels the op in the visualization.
func (r opRef) String() string {
	label := fmt.Sprintf("op %d, %s", r.index, leaseTag(r.op.Lease))
	if r.op.Token != 0 {
		label += fmt.Sprintf(", token %d", r.op.Token)
	}
	if r.op.Err != "" {
		label += ": " + r.op.Err
	}
	return label
}

// CheckLinearizable checks that ops (in the order recorded) fit model, for
// at most timeout (0: no limit). It returns false only for a history that
// cannot be linearized; a check that timed out returns true (nothing was
// found). info feeds WriteVisualization.
func CheckLinearizable(ops []Op, model porcupine.Model, timeout time.Duration) (bool, porcupine.LinearizationInfo) {
	res, info := checkLinearizable(ops, model, timeout)
	return res != porcupine.Illegal, info
}

func checkLinearizable(ops []Op, model porcupine.Model, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(model, operations(ops), timeout)
}

// unlinearized describes the locks whose history could not be linearized:
// how long a prefix could, and the first ops left out of it.
func unlinearized(ops []Op, info porcupine.LinearizationInfo) []Violation {
	byLock := partitionByLock(operations(ops)) // the partitions info has, in the same order
	var out []Violation
	for p, partials := range info.PartialLinearizationsOperations() {
		if p >= len(byLock) {
			break
		}
		best := 0
		for i, seq := range partials {
			if len(seq) > len(partials[best]) {
				best = i
			}
		}
		var done []porcupine.Operation
		if len(partials) > 0 {
			done = partials[best]
		}
		if len(done) == len(byLock[p]) {
			continue
		}
		out = append(out, Violation{
			Kind: ViolationLinearizability,
			Detail: fmt.Sprintf("lock %q: no sequential read-write lock explains its %d ops; the longest linearizable part has %d",
				byLock[p][0].Input.(Input).Lock, len(byLock[p]), len(done)),
			Ops: leftOut(byLock[p], done),
		})
	}
	return out
}

// leftOut returns up to 3 ops of a partition that are not in its longest
// partial linearization, earliest call first.
func leftOut(partition, done []porcupine.Operation) []Op {
	in := make(map[int]bool, len(done))
	for _, op := range done {
		in[op.Metadata.(opRef).index] = true
	}
	var rest []porcupine.Operation
	for _, op := range partition {
		if !in[op.Metadata.(opRef).index] {
			rest = append(rest, op)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return rest[a].Call < rest[b].Call })
	var out []Op
	for _, op := range rest[:min(3, len(rest))] {
		out = append(out, op.Metadata.(opRef).op)
	}
	return out
}
