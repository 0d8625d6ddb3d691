package faults

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

const (
	// commandTimeout bounds one command when ctx has no deadline
	// (redisnet.Command takes a timeout, not a context).
	commandTimeout = 5 * time.Second
	// pairTimeout bounds StartPair's wait for the replication link.
	pairTimeout = 15 * time.Second
)

// ScriptFlush empties the script cache of the Redis at addr (SCRIPT FLUSH),
// so that the next EVALSHA of any script fails with NOSCRIPT, as after a
// restart or a failover to a replica that never loaded it.
func ScriptFlush(ctx context.Context, addr string) error {
	return command(ctx, addr, "SCRIPT", "FLUSH")
}

// command runs one command that answers +OK, bounded by ctx's deadline.
// Cancelling ctx without a deadline does not interrupt it.
func command(ctx context.Context, addr string, args ...string) error {
	timeout := commandTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if timeout <= 0 {
		return context.DeadlineExceeded
	}
	reply, err := redisnet.Command(addr, timeout, args...)
	if err != nil {
		return fmt.Errorf("%v on %s: %w", args, addr, err)
	}
	if reply != "+OK" {
		return fmt.Errorf("%v on %s answered %q", args, addr, reply)
	}
	return nil
}

// Pair is a primary and a replica of it (redis-server processes from PATH, no persistence).
type Pair struct{ Primary, Replica *redistest.Redis }

// StartPair starts a primary and a replica of it with
// redistest.StartProcess (so both are killed at cleanup, and without
// redis-server on PATH the test is skipped, or fails when
// FAIRRW_REQUIRE_REDIS=1) and waits until the replica reports
// master_link_status:up in INFO replication, that is, until the initial
// sync is done.
//
// The primary runs with repl-diskless-sync-delay 0: Redis otherwise waits 5s
// for more replicas before the first sync.
func StartPair(tb testing.TB) *Pair {
	tb.Helper()
	primary := redistest.StartProcess(tb, "--repl-diskless-sync-delay", "0")
	host, port, err := net.SplitHostPort(primary.Addr)
	if err != nil {
		tb.Fatalf("faults: primary address %q: %v", primary.Addr, err)
	}
	replica := redistest.StartProcess(tb, "--replicaof", host, port)
	ctx, cancel := context.WithTimeout(context.Background(), pairTimeout)
	defer cancel()
	err = waitInfo(ctx, replica, func(info string) bool {
		return redisinfo.Field(info, "master_link_status") == "up"
	})
	if err != nil {
		tb.Fatalf("faults: replica %s of %s: link not up: %v", replica.Addr, primary.Addr, err)
	}
	return &Pair{Primary: primary, Replica: replica}
}

// Promote makes the replica a primary (REPLICAOF NO ONE), as a failover
// does after the test killed or stopped the primary. It keeps the data it
// has replicated and accepts writes from then on.
func (p *Pair) Promote(ctx context.Context) error {
	return command(ctx, p.Replica.Addr, "REPLICAOF", "NO", "ONE")
}

// WaitSynced waits until the replica has everything the primary had written
// when it was called: until the replica's slave_repl_offset (INFO
// replication) reaches the master_repl_offset the primary reported first.
// Reaches, not equals: the primary's own PINGs to its replicas move both
// offsets on meanwhile.
func (p *Pair) WaitSynced(ctx context.Context) error {
	var want int64
	err := waitInfo(ctx, p.Primary, func(info string) bool {
		var err error
		want, err = strconv.ParseInt(redisinfo.Field(info, "master_repl_offset"), 10, 64)
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("primary %s: master_repl_offset: %w", p.Primary.Addr, err)
	}
	var got string
	err = waitInfo(ctx, p.Replica, func(info string) bool {
		got = redisinfo.Field(info, "slave_repl_offset")
		n, err := strconv.ParseInt(got, 10, 64)
		return err == nil && n >= want
	})
	if err != nil {
		return fmt.Errorf("replica %s: slave_repl_offset %q, primary's master_repl_offset %d: %w",
			p.Replica.Addr, got, want, err)
	}
	return nil
}

// waitInfo reads INFO replication from r until done accepts it or ctx ends
// (redisnet reads only a reply's first line, so this takes a rueidis client).
func waitInfo(ctx context.Context, r *redistest.Redis, done func(info string) bool) error {
	return redistest.Poll(ctx, r.Addr, func(c rueidis.Client) (bool, error) {
		info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
		return err == nil && done(info), err
	})
}
