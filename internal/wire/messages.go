package wire

import (
	"strconv"
	"strings"
)

// FairMessage is a message on a fair lock's channel (lua/fair_lib.lua):
// "r", every waiting reader may enter; "g:<token>:<owner>", the writer
// owner was granted the lock by a release, with that token.
type FairMessage struct {
	Readers bool
	Grantee string
	Token   uint64
}

// DecodeFairMessage reads a fair lock's message; ok is false for any other
// (a probe, a foreign publisher's).
func DecodeFairMessage(msg string) (m FairMessage, ok bool) {
	if msg == "r" {
		return FairMessage{Readers: true}, true
	}
	rest, ok := strings.CutPrefix(msg, "g:")
	if !ok {
		return FairMessage{}, false
	}
	t, owner, ok := strings.Cut(rest, ":")
	token, err := strconv.ParseUint(t, 10, 64)
	if !ok || err != nil {
		return FairMessage{}, false
	}
	return FairMessage{Grantee: owner, Token: token}, true
}
