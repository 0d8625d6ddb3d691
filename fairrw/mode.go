package fairrw

// Mode is the kind of hold a Lease grants.
type Mode uint8

const (
	// Read is a shared hold: many owners may read together.
	Read Mode = iota + 1
	// Write is an exclusive hold: one owner, no readers but its own.
	Write
)

// String returns "read" or "write".
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	default:
		return "invalid"
	}
}
