package history

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// leased sets an op's lease id.
func leased(o Op, id uint64) Op { o.Lease = id; return o }

func TestModel(t *testing.T) {
	tests := []struct {
		name      string
		ops       []Op
		reentrant bool
		want      bool
	}{
		{"writer, then a waiting writer, downgrade, readers", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("B", Acquire, W, 2, 7, OK), // waited for A's release
			op("A", Release, W, 5, 6, OK),
			op("B", Acquire, R, 8, 9, OK),      // downgrade
			op("C", Acquire, R, 8, 9, Refused), // TryRLock while B writes
			op("C", Acquire, W, 8, 9, Refused), // TryLock while B writes
			op("B", Release, W, 10, 11, OK),    // B keeps its read
			op("C", Acquire, R, 12, 13, OK),    // reads together
			op("C", Acquire, R, 14, 15, OK),    // reentrant read
			op("D", Acquire, R, 12, 30, OK),
			op("C", Release, R, 16, 17, OK),
			op("C", Release, R, 16, 18, OK),
			op("B", Release, R, 19, 20, OK),
			op("D", Release, R, 31, 32, OK),
			op("A", Release, W, 33, 34, Refused), // not held
		}, true, true},
		{"two owners both granted the write", []Op{
			op("A", Acquire, W, 0, 10, OK),
			op("B", Acquire, W, 5, 15, OK),
		}, true, false},
		{"read granted under another owner's write", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("B", Acquire, R, 2, 3, OK),
		}, true, false},
		{"unknown acquire overlapping another owner's write", []Op{
			op("A", Acquire, W, 0, 10, OK),
			op("B", Acquire, W, 5, 15, Unknown),
			op("A", Release, W, 20, 21, OK),
			op("C", Acquire, W, 22, 23, OK), // B's acquire may never have taken effect
		}, true, true},
		{"unknown acquire taking effect explains a refusal", []Op{
			op("B", Acquire, W, 0, 5, Unknown),
			op("C", Acquire, W, 6, 7, Refused),
		}, true, true},
		{"unknown release", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("A", Release, W, 5, 6, Unknown),
			op("B", Acquire, W, 10, 11, OK),
		}, true, true},
		{"upgrade granted", []Op{
			op("A", Acquire, R, 0, 1, OK),
			op("A", Acquire, W, 2, 3, OK),
		}, true, false},
		{"upgrade refused", []Op{
			op("A", Acquire, R, 0, 1, OK),
			op("A", Acquire, W, 2, 3, Refused),
		}, true, true},
		{"release of what is not held", []Op{
			op("A", Release, W, 0, 1, OK),
		}, true, false},
		{"reentrant write", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("A", Acquire, W, 2, 3, OK),
			op("A", Release, W, 4, 5, OK),
			op("A", Release, W, 6, 7, OK),
		}, true, true},
		{"reentrant write, non-reentrant model", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("A", Acquire, W, 2, 3, OK),
		}, false, false},
		{"downgrade, non-reentrant model", []Op{
			op("A", Acquire, W, 0, 1, OK),
			op("A", Acquire, R, 2, 3, OK),
		}, false, true},
		{"lost lease, then another writer, then a refused unlock", []Op{
			leased(op("A", Acquire, W, 0, 1, OK), 1),
			leased(op("A", Lost, W, 10, 10, OK), 1),
			leased(op("B", Acquire, W, 5, 12, OK), 2),
			leased(op("A", Release, W, 15, 16, Refused), 1), // ends nothing
		}, true, true},
		{"a writer granted while a lease is believed held", []Op{
			leased(op("A", Acquire, W, 0, 1, OK), 1),
			leased(op("B", Acquire, W, 5, 12, OK), 2),
			leased(op("A", Release, W, 15, 16, Refused), 1), // Redis had lost it: too late
		}, true, false},
		{"second unlock of a lease succeeds", []Op{
			leased(op("A", Acquire, W, 0, 1, OK), 1),
			leased(op("A", Acquire, W, 2, 3, OK), 2),
			leased(op("A", Release, W, 4, 5, OK), 1),
			leased(op("A", Release, W, 6, 7, OK), 1),
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := Model(tt.reentrant)
			ok, info := CheckLinearizable(tt.ops, model, 10*time.Second)
			if ok != tt.want {
				t.Fatalf("linearizable: %v, want %v", ok, tt.want)
			}
			if !ok && len(unlinearized(tt.ops, info)) != 1 {
				t.Errorf("unlinearized: %v, want one lock", unlinearized(tt.ops, info))
			}
		})
	}
}

func TestWriteVisualization(t *testing.T) {
	ops := []Op{op("A", Acquire, W, 0, 10, OK), op("B", Acquire, W, 5, 15, OK)}
	model := Model(true)
	ok, info := CheckLinearizable(ops, model, 10*time.Second)
	if ok {
		t.Fatal("two overlapping write grants linearized")
	}
	path := WriteVisualization(t, t.Name(), model, info)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("<html")) || !bytes.Contains(data, []byte(`A acquire write -\u003e ok`)) {
		t.Fatalf("%s: %d bytes, want HTML describing the ops", path, len(data))
	}
}

// captureTB records what Verify reports instead of failing the test.
type captureTB struct {
	testing.TB
	errors, logs []string
}

func (c *captureTB) Helper() {}
func (c *captureTB) Errorf(format string, a ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, a...))
}
func (c *captureTB) Logf(format string, a ...any) { c.logs = append(c.logs, fmt.Sprintf(format, a...)) }

func TestVerifyReportsViolation(t *testing.T) {
	rec := NewRecorder()
	rec.Record(op("A", Acquire, W, 0, 10, OK))
	rec.Record(op("B", Acquire, W, 5, 15, OK))
	tb := &captureTB{TB: t}
	Verify(tb, rec)
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "violations: 1") ||
		!strings.Contains(tb.errors[0], `lock "L": no sequential read-write lock explains its 2 ops`) {
		t.Fatalf("errors: %q", tb.errors)
	}
	t.Log(tb.errors[0])
	var files []string
	for _, l := range tb.logs {
		if _, path, ok := strings.Cut(l, ": history: "); ok {
			files = append(files, path)
		}
		if _, path, ok := strings.Cut(l, ": visualization: "); ok {
			files = append(files, path)
		}
	}
	if len(files) != 2 {
		t.Fatalf("logs %q: want the paths of the history and of the visualization", tb.logs)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
}
