package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// VerifyTimeout bounds Verify's linearizability check; a check that runs
// out is logged as undecided, not failed.
const VerifyTimeout = time.Minute

// reportViolations is how many violations a failure report lists.
const reportViolations = 10

// Verify ends rec's history and checks it: CheckExclusion and CheckFencing
// on its holds, CheckLinearizable with Model(true) (the fairrw policies)
// on its ops. On success it logs "history: N ops, M holds, violations: 0";
// on failure it fails tb with the first violations and writes the history
// (JSON) and, if the ops could not be linearized, porcupine's
// visualization, to ArtifactsDir. A Store is checked apart, with
// Store.Check.
func Verify(tb testing.TB, rec *Recorder) {
	tb.Helper()
	rec.End()
	ops, holds := rec.Ops(), rec.Holds()
	violations := append(CheckExclusion(holds), CheckFencing(holds)...)
	model := Model(true)
	started := time.Now()
	res, info := checkLinearizable(ops, model, VerifyTimeout)
	switch res {
	case porcupine.Illegal:
		violations = append(violations, unlinearized(ops, info)...)
	case porcupine.Unknown:
		tb.Logf("history: linearizability undecided: the check ran out of its %v", VerifyTimeout)
	}
	if len(violations) == 0 {
		tb.Logf("history: %d ops, %d holds, violations: 0 (linearizability checked in %v)",
			len(ops), len(holds), time.Since(started).Round(time.Millisecond))
		return
	}
	WriteHistory(tb, tb.Name(), ops, holds)
	if res == porcupine.Illegal {
		WriteVisualization(tb, tb.Name(), model, info)
	}
	tb.Errorf("%s", report(len(ops), len(holds), violations))
}

// report lists the first violations and counts them by kind.
func report(ops, holds int, violations []Violation) string {
	counts := make(map[string]int)
	for _, v := range violations {
		counts[v.Kind]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d ops, %d holds, violations: %d (exclusion %d, fencing %d, linearizability %d)",
		ops, holds, len(violations), counts[ViolationExclusion], counts[ViolationFencing], counts[ViolationLinearizability])
	for _, v := range violations[:min(reportViolations, len(violations))] {
		fmt.Fprintf(&b, "\n%s", v)
	}
	if len(violations) > reportViolations {
		fmt.Fprintf(&b, "\n... %d more", len(violations)-reportViolations)
	}
	return b.String()
}
