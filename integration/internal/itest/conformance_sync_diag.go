package itest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// The sync/granted-while-cut diagnostic. A grant under WithSyncReplicas
// returned while the replica was SIGSTOPped, though made after the stop,
// was seen once and never again; the code shows no way to it (every
// acquire script writes, and its WAIT goes behind it on its connection,
// where Redis 7.0 waits for the offset that connection's last command
// left). What it takes to decide it next time:
//
//   - every WAIT the synced Clients sent, with the reply of the script
//     before it and its own (confWaitLog): no WAIT answering 1 in the
//     call's span means the library returned a grant its WAIT did not
//     confirm; a WAIT that answered 1 behind a script that minted the
//     token in the cut means Redis counted an acknowledgement that could
//     not cover the grant;
//   - the replica's acknowledged offset, as the primary reports it, and
//     its process state, at the cut's start and at the violation
//     (confReplicaProbe): an offset that moved during the cut, or a state
//     other than "T" (stopped), means the replica ran, and the cut the
//     oracle counted was not one.

// confWaitRec is one round trip of a synced attempt: a script and the
// WAIT behind it.
type confWaitRec struct {
	client    string
	sent, ret time.Time
	script    string // EVALSHA or EVAL (the first command)
	reply     string // the script's reply, as ToAny prints it, or its error
	acked     int64  // WAIT's reply (-1: an error)
	waitErr   string
	waitCmd   string // WAIT's arguments
}

// confWaitLog keeps the last confWaitLogSize synced round trips.
type confWaitLog struct {
	mu   sync.Mutex
	recs []confWaitRec
	next int
	full bool
}

const confWaitLogSize = 4096

// wrap returns the WithRedisWrapper function that records the synced
// round trips of a slot's Clients under label.
func (l *confWaitLog) wrap(label string) func(rueidis.Client) rueidis.Client {
	return func(rdb rueidis.Client) rueidis.Client { return &confWaitClient{Client: rdb, log: l, label: label} }
}

func (l *confWaitLog) add(r confWaitRec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recs == nil {
		l.recs = make([]confWaitRec, confWaitLogSize)
	}
	l.recs[l.next] = r
	l.next = (l.next + 1) % confWaitLogSize
	l.full = l.full || l.next == 0
}

// overlapping returns the records whose round trip overlaps [from, to],
// oldest first.
func (l *confWaitLog) overlapping(from, to time.Time) []confWaitRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []confWaitRec
	n := l.next
	if l.full {
		n = confWaitLogSize
	}
	for i := range n {
		r := l.recs[i]
		if l.full {
			r = l.recs[(l.next+i)%confWaitLogSize]
		}
		if r.sent.After(to) || r.ret.Before(from) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// confWaitClient records every DoMulti that carries a WAIT.
type confWaitClient struct {
	rueidis.Client
	log   *confWaitLog
	label string
}

func (c *confWaitClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	wi := -1
	var script, waitCmd string
	for i, cmd := range multi {
		args := cmd.Commands()
		if len(args) == 0 {
			continue
		}
		if i == 0 {
			script = args[0]
		}
		if strings.EqualFold(args[0], "WAIT") {
			wi = i
			waitCmd = strings.Join(args, " ")
		}
	}
	if wi < 0 {
		return c.Client.DoMulti(ctx, multi...)
	}
	sent := time.Now()
	res := c.Client.DoMulti(ctx, multi...)
	rec := confWaitRec{client: c.label, sent: sent, ret: time.Now(), script: script, waitCmd: waitCmd, acked: -1}
	if len(res) > 0 {
		if v, err := res[0].ToAny(); err != nil {
			rec.reply = "error: " + err.Error()
		} else {
			rec.reply = fmt.Sprint(v)
		}
	}
	if wi < len(res) {
		if n, err := res[wi].AsInt64(); err != nil {
			rec.waitErr = err.Error()
		} else {
			rec.acked = n
		}
	}
	c.log.add(rec)
	return res
}

// confReplicaProbe is what the primary reports of the replica, and the
// replica process's state.
type confReplicaProbe struct {
	at     time.Time
	acked  int64  // slave0's offset in the primary's INFO replication (-1: unknown)
	master int64  // the primary's master_repl_offset (-1: unknown)
	state  string // the replica's state in /proc/<pid>/stat ("T": stopped)
	// stopped: with a wait for the stop, when the state first read "T"
	// (SIGSTOP is delivered asynchronously); zero if it never did.
	stopped time.Time
	err     string
}

// probeReplica reads the primary's INFO replication (bounded by timeout)
// and the replica's process state; with waitStop, it first waits (as long)
// for the replica's state to read "T", every millisecond.
func (f *confFaults) probeReplica(timeout time.Duration, waitStop bool) confReplicaProbe {
	p := confReplicaProbe{acked: -1, master: -1, state: "?"}
	if f.Replica != nil {
		p.state = procState(f.Replica.Pid())
		for end := time.Now().Add(timeout); waitStop && p.state != "T" && p.state != "?" && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
			p.state = procState(f.Replica.Pid())
		}
		if waitStop && p.state == "T" {
			p.stopped = time.Now()
		}
	}
	if len(f.admins) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		admin := f.admins[0]
		info, err := admin.Do(ctx, admin.B().Info().Section("replication").Build()).ToString()
		cancel()
		if err != nil {
			p.err = err.Error()
		}
		p.acked, p.master = parseReplicationInfo(info)
	}
	p.at = time.Now()
	return p
}

// parseReplicationInfo returns the first replica's acknowledged offset and
// the primary's offset from INFO replication (-1 for either not found).
func parseReplicationInfo(info string) (acked, master int64) {
	acked, master = -1, -1
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				master = n
			}
		}
		if v, ok := strings.CutPrefix(line, "slave0:"); ok {
			for _, kv := range strings.Split(v, ",") {
				if o, ok := strings.CutPrefix(kv, "offset="); ok {
					if n, err := strconv.ParseInt(o, 10, 64); err == nil {
						acked = n
					}
				}
			}
		}
	}
	return acked, master
}

// procState is the state letter of process pid ("?" when unknown).
func procState(pid int) string {
	if pid <= 0 {
		return "?"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "?"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return "?"
	}
	return s[i+2 : i+3]
}

func (o *confOracle) describeProbe(p confReplicaProbe) string {
	if p.at.IsZero() {
		return "not read"
	}
	s := fmt.Sprintf("at %s: replica acknowledged offset %d of the primary's %d, replica process state %q", o.At(p.at), p.acked, p.master, p.state)
	if !p.stopped.IsZero() {
		s += ", first seen stopped at " + o.At(p.stopped)
	}
	if p.err != "" {
		s += " (INFO failed: " + p.err + ")"
	}
	return s
}

// syncDiagLocked describes, for a sync/granted-while-cut violation of h in
// cut c, the replica at the cut's start and now, and the synced round
// trips during h's call. It reads Redis (INFO, bounded by a second) under
// the oracle's lock: only when a violation is reported.
func (o *confOracle) syncDiagLocked(h *confHold, c confCut) string {
	var b strings.Builder
	now := o.faults.probeReplica(time.Second, false)
	fmt.Fprintf(&b, "\n    replica at the cut's start: %s", o.describeProbe(c.probe))
	fmt.Fprintf(&b, "\n    replica now: %s", o.describeProbe(now))
	// Acknowledgements the replica sent before the stop may still reach
	// the primary after the first probe, but none beyond what the primary
	// had sent by then.
	if c.probe.master >= 0 && now.acked > c.probe.master && (c.end.IsZero() || now.at.Before(c.end)) {
		b.WriteString("\n    the replica acknowledged, during the cut, data the primary sent after the stop: it was not stopped")
	}
	recs := o.waits.overlapping(h.callStart, h.granted)
	fmt.Fprintf(&b, "\n    synced round trips during the call (%d):", len(recs))
	for _, r := range recs {
		wait := strconv.FormatInt(r.acked, 10)
		if r.waitErr != "" {
			wait = "error: " + r.waitErr
		}
		fmt.Fprintf(&b, "\n      [%s] sent %s returned %s: %s -> %s; %s -> %s", r.client, o.At(r.sent), o.At(r.ret), r.script, r.reply, r.waitCmd, wait)
	}
	return b.String()
}
