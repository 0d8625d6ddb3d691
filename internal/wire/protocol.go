package wire

import (
	"strconv"
	"strings"
)

// Protocol is the version of the fair policies' protocol: which keys and
// fields their scripts keep for a lock, and what each means. A new version
// is needed when a script of one would misread what the other writes (the
// fast release of protocol 2 deletes a state that no full script marked
// "busy", which protocol 1 never marks; protocol 3 mints each write token
// at least TokenReserve above the last, and a Client hands the tokens in
// between to its cohort, which a grant of protocol 2, one above the last,
// would mint again; protocol 4 keeps the top of the last token range in
// the fence key, one above which it mints, and closes a range at its
// write's release, where protocol 3 keeps the token and mints TokenReserve
// above it: each would mint tokens inside the other's ranges).
//
// A lock's state records the protocol with its policy ("writer-preferring/3",
// PolicyRecord), and a fair acquire refuses a lock whose state records
// anything else (FAIRRW_POLICY, fairrw.ErrPolicyMismatch), so Clients of two
// protocols never share a lock, each applying rules the other does not know.
// A record without a version is protocol 1's, which checked the policy the
// same way: it refuses protocol 2's records too.
const Protocol = 4

// TokenReserve is how many fencing tokens a write grant reserves at most
// (protocol 4): its own and the TokenReserve-1 above it, which its Client
// hands to the writers it passes the lock to without Redis. A grant made
// on a queued writer's behalf reserves them all; a direct grant as many as
// its attempt asks (FairAcquire.Reserve). The release that ends the write
// closes the range at the highest token handed out, and the next grant's
// token is one above that, or the server's clock: tokens run ahead of the
// clock only by the ranges of writes that ended without their release.
// common.lua's RESERVE is the scripts' copy.
const TokenReserve = 64

// PolicyRecord returns what a lock's state records for policy under
// protocol: "<policy>/<protocol>", or the bare policy for protocol 1.
func PolicyRecord(policy string, protocol int) string {
	if protocol <= 1 {
		return policy
	}
	return policy + "/" + strconv.Itoa(protocol)
}

// ParsePolicyRecord is PolicyRecord's inverse: a record without a version
// is protocol 1's.
func ParsePolicyRecord(record string) (policy string, protocol int) {
	i := strings.LastIndexByte(record, '/')
	if i < 0 {
		return record, 1
	}
	v, err := strconv.Atoi(record[i+1:])
	if err != nil || v < 2 {
		return record, 1
	}
	return record[:i], v
}
