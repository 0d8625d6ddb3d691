package lua

import (
	"strings"
	"testing"
)

// TestHeaders: every script states its KEYS, ARGV and return values, as the
// style of this repository asks.
func TestHeaders(t *testing.T) {
	names := Names()
	if len(names) < 7 {
		t.Fatalf("only %d scripts embedded: %v", len(names), names)
	}
	for _, name := range names {
		src := Source(name)
		for _, part := range []string{"KEYS[1]", "ARGV[1]", "Returns", "Invariant"} {
			if !strings.Contains(src, part) {
				t.Errorf("%s.lua: header does not mention %q", name, part)
			}
		}
	}
}

func TestSourceOfUnknownPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Source of an unknown script did not panic")
		}
	}()
	Source("no_such_script")
}
