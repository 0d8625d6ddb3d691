package wait

import (
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/wire"
)

// A signal is what one message on a lock's channel means for the waiters
// of this Client: whom it lets in. Each policy decodes its own messages
// (Keys.Format); the registry only applies the result.
type signal struct {
	// readers: every waiting reader may enter.
	readers bool
	// writer: which waiting writer to wake besides.
	writer writerWake
	// owner is the writer named (writerNamed).
	owner string
	// granted: the release granted the named writer the lock, with token;
	// it holds it without another attempt (see Waiter.TakeGrant).
	granted bool
	token   uint64
}

// writerWake says which waiting writer a message wakes.
type writerWake uint8

const (
	writerNone      writerWake = iota
	writerOne                  // the longest-waiting writer, or anyone if no reader was woken
	writerUnqueued             // one writer that keeps no place in a queue (a quorum's)
	writerNamed                // the writer named by owner
	writerOrAnyMode            // one waiter of any mode (Redisson's "0")
)

// Format says which messages a lock's channel carries: each policy
// publishes its own.
type Format uint8

const (
	// JavaFormat is Java's messages, which the Redisson and the mutex
	// policies publish.
	JavaFormat Format = iota + 1
	// FairFormat is the fair policies' messages.
	FairFormat
)

// decode reads a message on a lock's channel: whom it lets in. A format
// unknown lets no one in.
func (f Format) decode(msg string) signal {
	switch f {
	case JavaFormat:
		return decodeJava(msg)
	case FairFormat:
		return decodeFair(msg)
	default:
		return signal{}
	}
}

// decodeFair decodes the fair policies' messages (wire.DecodeFairMessage):
// "r" lets every reader in, and a writer that keeps no place in the queue
// (a quorum's: a queued one would have been granted instead); a grant
// tells its owner it was granted the write.
func decodeFair(msg string) signal {
	m, ok := wire.DecodeFairMessage(msg)
	switch {
	case !ok:
		return signal{}
	case m.Readers:
		return signal{readers: true, writer: writerUnqueued}
	default:
		return signal{writer: writerNamed, owner: m.Grantee, granted: true, token: m.Token}
	}
}

// decodeJava decodes Java's messages: "1" (a writer left, or a write was downgraded) can let
// every reader in and one writer; "0" (the last reader left, or a lock was
// freed) one waiter of either mode.
func decodeJava(msg string) signal {
	if msg == compat.ReadUnlockMessage {
		return signal{readers: true, writer: writerOne}
	}
	return signal{writer: writerOrAnyMode}
}
