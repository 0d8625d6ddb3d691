package fairrw_test

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/wire"
)

// TestModeOnTheWire: fairrw converts its Mode to the wire's by value
// (wire.Mode(m)), so the two must number the modes alike.
func TestModeOnTheWire(t *testing.T) {
	if wire.Mode(fairrw.Read) != wire.Read || wire.Mode(fairrw.Write) != wire.Write {
		t.Fatalf("fairrw.Read, fairrw.Write = %d, %d; wire.Read, wire.Write = %d, %d", fairrw.Read, fairrw.Write, wire.Read, wire.Write)
	}
}
