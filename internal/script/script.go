// Package script runs fairrw's Lua scripts through rueidis: by EVALSHA, with
// EVAL as the fallback when the server has lost its script cache (restart,
// failover, SCRIPT FLUSH), for single calls and for batches sent in one
// round trip.
package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/lua"
)

// Script is one embedded Lua script, wrapped once.
type Script struct {
	name      string
	src       string
	sha       string
	retryable bool
}

// Call is one execution of a script in a batch. Script may be nil when the
// batch is run by a Script's ExecBatch, which then runs its own.
type Call struct {
	Script *Script
	Keys   []string
	Args   []string
}

// New wraps the embedded script name. Only scripts that are idempotent for a
// retry (latches, attempt ids, or plain PEXPIREs) may be made retryable:
// rueidis resends a retryable command after a broken connection even when
// the first copy already ran.
func New(name string, retryable bool) *Script {
	return NewFrom(name, lua.Source(name), retryable)
}

// NewFrom wraps a script made of several embedded files (see lua.Compose).
func NewFrom(name, src string, retryable bool) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, sha: hex.EncodeToString(sum[:]), retryable: retryable}
}

// Name returns the script's file name without ".lua".
func (s *Script) Name() string { return s.name }

// SHA1 returns the script's SHA-1 digest, as EVALSHA takes it.
func (s *Script) SHA1() string { return s.sha }

// Exec runs the script once: EVALSHA, then EVAL on NOSCRIPT.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	res := c.Do(ctx, s.command(c, false, keys, args))
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && err.IsNoScript() {
		res = c.Do(ctx, s.command(c, true, keys, args))
	}
	return res
}

// command builds one EVALSHA (or, with eval, EVAL) of the script, marked
// retryable if the script is. Every command is pinned (never recycled by
// rueidis): when a connection breaks, rueidis v1.0.79 can return from Do
// while its writer still reads the command, and recycling it then is a
// data race (seen under connection resets with -race).
func (s *Script) command(c rueidis.Client, eval bool, keys, args []string) rueidis.Completed {
	var cmd rueidis.Completed
	if eval {
		cmd = c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	} else {
		cmd = c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	if s.retryable {
		cmd = cmd.ToRetryable()
	}
	return cmd.Pin()
}

// ExecBatch is for idempotent scripts only (every command is sent as
// retryable). It runs every call of s in one DoMulti round trip (see Batch).
func (s *Script) ExecBatch(ctx context.Context, c rueidis.Client, calls []Call) []rueidis.RedisResult {
	for i := range calls {
		calls[i].Script = s
	}
	return Batch(ctx, c, calls)
}

// Batch runs calls of idempotent scripts (every command is sent as
// retryable), each of its own Script, in one DoMulti round trip (rueidis
// groups them by slot on a cluster). Calls answered NOSCRIPT are sent again
// with EVAL in a second round trip. Results are in the order of calls.
func Batch(ctx context.Context, c rueidis.Client, calls []Call) []rueidis.RedisResult {
	if len(calls) == 0 {
		return nil
	}
	build := func(call Call, eval bool) rueidis.Completed {
		s := call.Script
		if eval {
			return c.B().Eval().Script(s.src).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...).Build().ToRetryable().Pin()
		}
		return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...).Build().ToRetryable().Pin()
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = build(call, false)
	}
	results := c.DoMulti(ctx, cmds...)
	var missing []int
	for i, r := range results {
		if err, ok := rueidis.IsRedisErr(r.Error()); ok && err.IsNoScript() {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return results
	}
	again := make(rueidis.Commands, len(missing))
	for j, i := range missing {
		again[j] = build(calls[i], true)
	}
	for j, r := range c.DoMulti(ctx, again...) {
		results[missing[j]] = r
	}
	return results
}

// ExecSynced runs the script like Exec, followed on the same connection and
// in the same round trip by WAIT replicas timeout: WAIT blocks until that
// many replicas acknowledged the connection's writes (the script's
// included) or the timeout passes. It returns the script's result and how
// many replicas acknowledged. rueidis sends a batch holding a blocking
// command such as WAIT on a dedicated connection, so no other client's
// commands come between.
func (s *Script) ExecSynced(ctx context.Context, c rueidis.Client, keys, args []string, replicas int64, timeout time.Duration) (rueidis.RedisResult, int64, error) {
	wait := func() rueidis.Completed {
		return c.B().Wait().Numreplicas(replicas).Timeout(max(timeout.Milliseconds(), 1)).Build().Pin()
	}
	res := c.DoMulti(ctx, s.command(c, false, keys, args), wait())
	if err, ok := rueidis.IsRedisErr(res[0].Error()); ok && err.IsNoScript() {
		res = c.DoMulti(ctx, s.command(c, true, keys, args), wait())
	}
	acked, err := res[1].AsInt64()
	return res[0], acked, err
}

// ExecTracked runs the script like Exec, right behind CLIENT CACHING YES on
// the same connection, in one round trip. Under OPTIN client tracking the
// keys the script reads are then tracked for this connection: a later change
// to them (or their expiry) comes back as an invalidation. Sending both in
// one DoMulti keeps them in order on one connection, so the tracking is in
// place before the script reads, with no extra round trip.
func (s *Script) ExecTracked(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	caching := func() rueidis.Completed { return c.B().ClientCaching().Yes().Build().Pin() }
	res := c.DoMulti(ctx, caching(), s.command(c, false, keys, args))[1]
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && err.IsNoScript() {
		res = c.DoMulti(ctx, caching(), s.command(c, true, keys, args))[1]
	}
	return res
}
