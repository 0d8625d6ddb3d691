package fairrw

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// newRequestID returns 32 random hex digits: the form Redisson uses for its
// unlock request ids, and the form of fairrw's attempt ids. Only uniqueness
// matters here, not secrecy, so the fast goroutine-safe generator of
// math/rand/v2 (ChaCha8, randomly seeded) is enough.
func newRequestID() string {
	id, _ := newRequestIDAfter("")
	return id
}

// newRequestIDAfter returns a new request id (as newRequestID) and prefix
// followed by it, both in one allocation: the id is the tail of the other.
func newRequestIDAfter(prefix string) (id, prefixed string) {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	var h [32]byte
	hex.Encode(h[:], b[:])
	prefixed = prefix + string(h[:])
	return prefixed[len(prefix):], prefixed
}
