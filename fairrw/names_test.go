package fairrw

import (
	"errors"
	"testing"
)

// TestReservedNames: names that start like fairrw's own keys are refused
// (a Redisson lock "fairrw:{x}" would be lock x's fair state); names that
// merely start with the word are not.
func TestReservedNames(t *testing.T) {
	for name, refused := range map[string]bool{
		"fairrw:{x}":           true,
		"fairrw:{x}:readers":   true,
		"fairrw_fence:{x}":     true,
		"fairrw_attempt:{x}:1": true,
		"fairrw":               false,
		"fairrwx":              false,
		"fairrw-lock":          false,
		"my:fairrw:{x}":        false,
	} {
		for _, p := range []Policy{Redisson(), WriterPreferring(), PhaseFair()} {
			_, err := p.impl().keys(name)
			if got := errors.Is(err, ErrInvalidName); got != refused {
				t.Errorf("%s: keys(%q) = %v; refused %v, want %v", p, name, err, got, refused)
			}
		}
	}
}
