// Package script runs fairrw's Lua scripts through rueidis: by EVALSHA, with
// EVAL as the fallback when the server has lost its script cache (restart,
// failover, SCRIPT FLUSH), for single calls and for batches sent in one
// round trip.
package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/lua"
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

// ExecTracked runs the script like Exec, with CLIENT CACHING YES before it
// on the same connection, in one round trip: under OPTIN client tracking the
// keys the script reads are then tracked for this connection, and a later
// change to them (or their expiry) comes back as an invalidation.
//
// Both go in one MULTI ... EXEC, so that they stay together on one node: a
// cluster client that follows a MOVED redirect (a failover, a migration)
// resends a transaction as a whole, but would send a bare EVALSHA alone to
// the new node, leaving CLIENT CACHING behind and the key untracked (and
// the waiter unwoken by its change). Redis tracks every read of a
// transaction that CLIENT CACHING YES precedes within it.
//
// An error queueing the script (a redirection not followed, TRYAGAIN) is
// returned as the script's, as Exec would return it; one queueing CLIENT
// CACHING (a server that refuses it in a transaction) makes it run the
// script untracked with Exec.
func (s *Script) ExecTracked(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	res, ok := s.execTracked(ctx, c, false, keys, args)
	if err, isRedis := rueidis.IsRedisErr(res.Error()); ok && isRedis && err.IsNoScript() {
		res, ok = s.execTracked(ctx, c, true, keys, args)
	}
	if !ok {
		return s.Exec(ctx, c, keys, args)
	}
	return res
}

// execTracked runs one tracked transaction of the script (EVALSHA, or with
// eval EVAL). ok is false when CLIENT CACHING was refused and the script
// did not run.
func (s *Script) execTracked(ctx context.Context, c rueidis.Client, eval bool, keys, args []string) (res rueidis.RedisResult, ok bool) {
	results := c.DoMulti(ctx,
		c.B().Multi().Build().Pin(),
		c.B().ClientCaching().Yes().Build().Pin(),
		s.command(c, eval, keys, args),
		c.B().Exec().Build().Pin())
	if err := results[0].Error(); err != nil {
		return results[0], true
	}
	if err := results[2].Error(); err != nil {
		return results[2], true // not queued: the script did not run
	}
	if _, refused := rueidis.IsRedisErr(results[1].Error()); refused {
		return results[1], false
	}
	replies, err := results[3].ToArray()
	if err != nil {
		return results[3], true
	}
	if len(replies) != 2 {
		return rueidis.NewErrorResult(fmt.Errorf("script: %s: EXEC answered %d replies, want 2", s.name, len(replies))), true
	}
	return rueidis.NewResult(replies[1], nil), true
}
