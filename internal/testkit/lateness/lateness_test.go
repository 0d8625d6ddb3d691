package lateness

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWorstStall: WorstStall reads the stalls of the kind asked for that
// overlap the span asked about, and none shorter than stallRecorded is
// kept.
func TestWorstStall(t *testing.T) {
	l := &Control{}
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l.stalled(Stall{From: at(0), To: at(100), Redis: "r"})
	l.stalled(Stall{From: at(300), To: at(700), Redis: "r"})
	l.stalled(Stall{From: at(0), To: at(1000)})              // a bare wait's
	l.stalled(Stall{From: at(800), To: at(810), Redis: "r"}) // under stallRecorded: not kept
	for _, tc := range []struct {
		from, to int
		redis    bool
		want     time.Duration
	}{
		{0, 200, true, 100 * time.Millisecond},
		{150, 250, true, 0},
		{200, 2000, true, 400 * time.Millisecond},
		{750, 900, true, 0},
		{150, 250, false, time.Second},
	} {
		if got := l.WorstStall(at(tc.from), at(tc.to), tc.redis); got != tc.want {
			t.Errorf("WorstStall([%dms, %dms], redis %v) = %v, want %v", tc.from, tc.to, tc.redis, got, tc.want)
		}
	}
}

// judgedTB records a control's verdict.
type judgedTB struct {
	testing.TB
	errs []string
}

func (j *judgedTB) Errorf(format string, args ...any) {
	j.errs = append(j.errs, fmt.Sprintf(format, args...))
}

// TestWithinWaits: a bound of a call that waits on timers one after
// another is its allowance plus that many times the control's worst
// lateness; Within counts one. (A control with no sampler running: its
// worst lateness is the one set here, whatever the machine does.)
func TestWithinWaits(t *testing.T) {
	l := &Control{stop: make(chan struct{}), done: make(chan struct{}), samples: 1, worst: time.Second}
	close(l.done)
	l.WithinWaits("two waits, within", 2900*time.Millisecond, time.Second, 2)
	l.WithinWaits("two waits, past", 3100*time.Millisecond, time.Second, 2)
	l.Within("one wait, past", 2100*time.Millisecond, time.Second)
	l.Within("one wait, within", 1900*time.Millisecond, time.Second)
	j := &judgedTB{TB: t}
	l.judge(j)
	if len(j.errs) != 2 || !strings.HasPrefix(j.errs[0], "two waits, past:") || !strings.HasPrefix(j.errs[1], "one wait, past:") {
		t.Fatalf("verdict %q, want the two checks past their bound", j.errs)
	}
}

// TestTries: a try whose bounds failed while the machine's own lateness
// was past a failed check's allowance is made again; one whose bounds
// failed on a machine that kept to the allowance fails the test at once,
// and so does the last try, whatever the machine did.
func TestTries(t *testing.T) {
	stalled := func(ctl *Control) { ctl.sample(time.Second) } // the machine ran a wait 1 s late
	for _, tc := range []struct {
		name  string
		tries int
		try   func(n int, ctl *Control)
		runs  int
		errs  string // the prefix of the one error, "" for none
	}{
		{"passes after a stalled try", 3, func(n int, ctl *Control) {
			if n == 1 {
				stalled(ctl)
				ctl.Within("stalled", 1200*time.Millisecond, 150*time.Millisecond)
			}
		}, 2, ""},
		{"fails where the machine kept time", 3, func(n int, ctl *Control) {
			if n == 1 {
				stalled(ctl)
				ctl.Within("stalled", 1200*time.Millisecond, 150*time.Millisecond)
				return
			}
			ctl.Within("on time", 10*time.Second, 150*time.Millisecond)
		}, 2, "try 2: on time:"},
		{"the last try is judged", 2, func(n int, ctl *Control) {
			stalled(ctl)
			ctl.Within("stalled", 1200*time.Millisecond, 150*time.Millisecond)
		}, 2, "try 2: stalled:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &judgedTB{TB: t}
			runs := 0
			Tries(j, tc.tries, func(n int, ctl *Control) {
				runs++
				tc.try(n, ctl)
			})
			if runs != tc.runs {
				t.Errorf("%d tries run, want %d", runs, tc.runs)
			}
			switch {
			case tc.errs == "" && len(j.errs) != 0:
				t.Errorf("verdict %q, want none", j.errs)
			case tc.errs != "" && (len(j.errs) != 1 || !strings.HasPrefix(j.errs[0], tc.errs)):
				t.Errorf("verdict %q, want one error %q...", j.errs, tc.errs)
			}
		})
	}
}
