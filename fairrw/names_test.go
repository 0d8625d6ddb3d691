package fairrw

import (
	"errors"
	"testing"

	"github.com/fairrw/rwlock/internal/wire"
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
		"fairrw:1:{x}":         true,
		"fairrw:1:{x}:fence":   true,
		"fairrw:3:{x}:readers": true,
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

// TestDistinctNamesDisjointKeys: distinct valid names never share a key or
// a channel of fairrw's per-lock state (the fair policies' keys and channel,
// the last fencing token of every policy): "x" and "{x}" are two locks, and
// the state key of "{orders}:readers" is not the readers key of "orders".
// (Owner markers and latches are per owner or request, unique anyway.)
func TestDistinctNamesDisjointKeys(t *testing.T) {
	names := []string{"x", "{x}", "orders", "{orders}", "{orders}:readers", "orders:readers", "{orders}:fence", "{orders}:wake", "a:{x}", "{x}:1"}
	seen := map[string]string{}
	for _, n := range names {
		fk := wire.Fair(n)
		for _, k := range []string{fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fk.Channel, wire.Fence(n)} {
			if other, ok := seen[k]; ok && other != n {
				t.Errorf("names %q and %q share the key %q", other, n, k)
			}
			seen[k] = n
		}
	}
}
