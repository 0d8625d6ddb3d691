package history

import (
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// base is the origin of the hand-made histories; at(n) is n ms after it.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

func hold(owner string, mode fairrw.Mode, from, to int, token uint64) Hold {
	return Hold{Owner: owner, Lock: "L", Mode: mode, From: at(from), To: at(to), Token: token}
}

func op(owner string, kind Kind, mode fairrw.Mode, call, ret int, out Outcome) Op {
	return Op{Owner: owner, Lock: "L", Mode: mode, Kind: kind, Call: at(call), Return: at(ret), Outcome: out}
}

const (
	R = fairrw.Read
	W = fairrw.Write
)
