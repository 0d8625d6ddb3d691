package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisinfo"
	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

// SentinelMasterSet is the name StartSentinel's sentinel monitors its
// primary under.
const SentinelMasterSet = "fairrw"

const (
	// sentinelDownAfter is the sentinel's down-after-milliseconds: how long
	// the primary must not answer before the sentinel starts a failover.
	// At 1000 a loaded CI machine saw a failover nobody asked for: a new
	// primary, busy for a second right after its promotion (the old one
	// re-attaching and syncing from it), was failed over back, and the
	// harness waited for the primary it knew until its deadline. 3000
	// costs a kill's failover two seconds.
	sentinelDownAfter = 3000
	// sentinelFailoverTimeout is the sentinel's failover-timeout (ms). It
	// bounds a failover that cannot promote its replica; the next automatic
	// attempt comes twice that much later.
	sentinelFailoverTimeout = 10000
	// sentinelReadyTimeout bounds the wait for the replication link and for
	// the sentinel to know the replica, at start and before a Failover. After
	// a failover the old primary keeps its role for about 8s before the
	// sentinel converts it into a replica, and the sentinel reads a replica's
	// INFO every 10s.
	sentinelReadyTimeout = time.Minute
	// sentinelFailoverWait bounds a failover, from SENTINEL FAILOVER or the
	// primary's death to the replica's promotion (about 1s for a requested
	// failover, sentinelDownAfter plus that after a kill, on an idle machine).
	sentinelFailoverWait = time.Minute
)

// Sentinel is a primary, a replica of it, and one redis-sentinel process
// that monitors them as MasterSet with a quorum of 1, all started from PATH
// on loopback ports and killed at cleanup (see StartSentinel).
//
// Primary and Replica are the servers in the roles the harness saw last:
// Failover and AwaitFailover swap them. A Sentinel is not safe for
// concurrent use by several goroutines while one of them fails over.
type Sentinel struct {
	Addr      string // the sentinel's host:port
	MasterSet string // the name the sentinel monitors the primary under

	Primary, Replica *Redis

	proc *Redis // the redis-sentinel process
}

// StartSentinel starts a primary, a replica of it and a redis-sentinel that
// monitors the primary, and returns once a failover can start at once: the
// replica has finished its initial sync and the sentinel lists it as a
// healthy replica (flags "slave", master-link-status "ok"). The sentinel
// runs with
//
//	sentinel monitor <MasterSet> 127.0.0.1 <primary port> 1
//	sentinel down-after-milliseconds <MasterSet> 3000
//	sentinel failover-timeout <MasterSet> 10000
//
// from a configuration file in tb.TempDir() (the sentinel rewrites it). Both
// servers run with repl-diskless-sync-delay 0, so that a new replica syncs at
// once whichever is the primary.
//
// Without redis-server and redis-sentinel on PATH the test is skipped, or
// fails when FAIRRW_REQUIRE_REDIS=1.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	bin, err := lookRedisSentinel()
	if err != nil {
		unavailable(tb, requireRedis(), EnvRequireRedis,
			"redis-sentinel not found on PATH (install it, e.g. apt-get install redis-sentinel): %v", err)
	}
	primary := StartProcess(tb, "--repl-diskless-sync-delay", "0")
	host, port, err := net.SplitHostPort(primary.Addr)
	if err != nil {
		tb.Fatalf("redistest: primary address %q: %v", primary.Addr, err)
	}
	replica := StartProcess(tb, "--repl-diskless-sync-delay", "0", "--replicaof", host, port)
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	// The sentinel reads the primary's INFO as soon as it connects, and then
	// every 10s: a replica that attaches later is only found then.
	if err := waitLinkUp(ctx, replica); err != nil {
		tb.Fatalf("redistest: replica %s of %s: link not up: %v", replica.Addr, primary.Addr, err)
	}
	s := &Sentinel{MasterSet: SentinelMasterSet, Primary: primary, Replica: replica}
	s.proc = startSentinelProcess(tb, bin, s.MasterSet, primary.Addr)
	s.Addr = s.proc.Addr
	if err := s.waitReady(ctx); err != nil {
		tb.Fatalf("redistest: %v\n---- tail of %s ----\n%s\n----", err, s.proc.logPath, tail(s.proc.logPath, 40))
	}
	return s
}

func lookRedisSentinel() (string, error) { return exec.LookPath("redis-sentinel") }

// startSentinelProcess starts redis-sentinel on a free port, monitoring the
// primary at primaryAddr, and waits until it answers PING. It is killed and
// waited for at cleanup.
func startSentinelProcess(tb testing.TB, bin, masterSet, primaryAddr string) *Redis {
	tb.Helper()
	host, port, _ := net.SplitHostPort(primaryAddr)
	return launch(tb, bin, "redis-sentinel.log", func(dir string, p int) ([]string, error) {
		conf := filepath.Join(dir, "sentinel.conf")
		text := strings.Join([]string{
			"port " + strconv.Itoa(p),
			"bind 127.0.0.1",
			"dir " + dir,
			fmt.Sprintf("sentinel monitor %s %s %s 1", masterSet, host, port),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", masterSet, sentinelDownAfter),
			fmt.Sprintf("sentinel failover-timeout %s %d", masterSet, sentinelFailoverTimeout),
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", conf, err)
		}
		return []string{conf}, nil
	})
}

// ClientOption returns a ClientOption that reaches the primary through the
// sentinel: rueidis asks the sentinel for the primary's address and follows
// its +switch-master events.
func (s *Sentinel) ClientOption() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress: []string{s.Addr},
		Sentinel:    rueidis.SentinelOption{MasterSet: s.MasterSet},
	}
}

// Client returns a Sentinel-mode rueidis.Client built from ClientOption with
// mutate (may be nil) applied, and closed at cleanup.
func (s *Sentinel) Client(tb testing.TB, mutate func(*rueidis.ClientOption)) rueidis.Client {
	tb.Helper()
	opt := s.ClientOption()
	if mutate != nil {
		mutate(&opt)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("redistest: rueidis client through the sentinel at %s: %v", s.Addr, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Failover asks the sentinel to fail over (SENTINEL FAILOVER), waits until
// the replica is promoted, and returns it, now s.Primary. It first waits,
// like StartSentinel, until the sentinel knows a healthy replica: after an
// earlier failover that takes 10-20s (the sentinel converts the old primary
// into a replica, then reads its INFO every 10s), or a few seconds after
// AttachReplica.
//
// The sentinel does not stop the old primary: until it converts it into a
// replica of the new one, about 8s later, it is still a primary, and rueidis
// clients go on writing to it until the +switch-master event reaches them
// (about 1s after the promotion): writes that the new primary never gets.
// Until that conversion the new primary has no replica (see AttachReplica).
func (s *Sentinel) Failover(tb testing.TB) *Redis {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout+sentinelFailoverWait)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		tb.Fatalf("redistest: failover: %v\n---- tail of %s ----\n%s\n----", err, s.proc.logPath, tail(s.proc.logPath, 60))
	}
	// A failure to reach the sentinel is retried. So are the refusals that
	// start nothing, while no earlier try may have reached it: -INPROG (the
	// failover in progress is an earlier one: after AwaitFailover the
	// sentinel is still reconfiguring for a while) and -NOGOODSLAVE (it
	// does not yet count a replica just attached as good). Any other error
	// reply ends the wait, and so does a refusal after a try whose fate is
	// unknown: a failover may be ours, and a second one would fail back.
	var (
		reply  error
		unsure bool
	)
	err := Poll(ctx, s.Addr, func(c rueidis.Client) (bool, error) {
		reply = c.Do(ctx, c.B().SentinelFailover().Master(s.MasterSet).Build()).Error()
		if re, ok := rueidis.IsRedisErr(reply); ok {
			if msg := re.Error(); !unsure && (strings.HasPrefix(msg, "INPROG") || strings.HasPrefix(msg, "NOGOODSLAVE")) {
				return false, reply
			}
			return true, nil
		}
		unsure = unsure || reply != nil
		return reply == nil, reply
	})
	if err == nil {
		err = reply
	}
	if err != nil {
		tb.Fatalf("redistest: SENTINEL FAILOVER %s on %s: %v", s.MasterSet, s.Addr, err)
	}
	return s.AwaitFailover(tb)
}

// AwaitFailover waits until the sentinel has promoted the replica, for
// example after the test killed the primary, and returns it, now
// s.Primary. Promoted means the sentinel names it as the primary
// (SENTINEL GET-MASTER-ADDR-BY-NAME) and it reports role master itself.
func (s *Sentinel) AwaitFailover(tb testing.TB) *Redis {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelFailoverWait)
	defer cancel()
	var named string
	err := Poll(ctx, s.Addr, func(c rueidis.Client) (bool, error) {
		var err error
		named, err = s.masterAddr(ctx, c)
		return err == nil && named == s.Replica.Addr, err
	})
	if err == nil {
		err = Poll(ctx, s.Replica.Addr, func(c rueidis.Client) (bool, error) {
			role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
			return err == nil && roleIs(role, "master"), err
		})
	}
	if err != nil {
		tb.Fatalf("redistest: the sentinel at %s did not promote %s (it names %q as the primary): %v\n---- tail of %s ----\n%s\n----",
			s.Addr, s.Replica.Addr, named, err, s.proc.logPath, tail(s.proc.logPath, 40))
	}
	s.Primary, s.Replica = s.Replica, s.Primary
	return s.Primary
}

// AttachReplica makes s.Replica a replica of s.Primary (REPLICAOF) and
// waits until it has synced. After Failover the sentinel does it by itself,
// but only about 8s later: until then the new primary has no replica, and
// every WAIT on it (fairrw.WithSyncReplicas) times out. After a kill and
// AwaitFailover, s.Replica is not running: it is started first, without its
// data (no persistence), with the arguments it had when it first started.
//
// Call it once the test's clients have left the old primary: rueidis
// follows the sentinel some milliseconds after Failover or AwaitFailover
// return, and a client still sending to the old primary would get READONLY
// replies from it, or be granted on it while it is an empty primary after a
// restart.
func (s *Sentinel) AttachReplica(tb testing.TB) {
	tb.Helper()
	s.Replica.mu.Lock()
	running := s.Replica.proc != nil
	s.Replica.mu.Unlock()
	if !running {
		s.Replica.Restart(tb)
	}
	host, port, err := net.SplitHostPort(s.Primary.Addr)
	if err != nil {
		tb.Fatalf("redistest: primary address %q: %v", s.Primary.Addr, err)
	}
	if reply, err := redisnet.Command(s.Replica.Addr, startTimeout, "REPLICAOF", host, port); err != nil || reply != "+OK" {
		tb.Fatalf("redistest: REPLICAOF %s %s on %s: %q, %v", host, port, s.Replica.Addr, reply, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	if err := waitLinkUp(ctx, s.Replica); err != nil {
		tb.Fatalf("redistest: replica %s of %s: link not up: %v", s.Replica.Addr, s.Primary.Addr, err)
	}
}

// waitLinkUp waits until replica reports master_link_status:up, that is,
// until its sync with its primary is done.
func waitLinkUp(ctx context.Context, replica *Redis) error {
	return Poll(ctx, replica.Addr, func(c rueidis.Client) (bool, error) {
		info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
		return err == nil && redisinfo.Field(info, "master_link_status") == "up", err
	})
}

// CurrentPrimary returns the server the sentinel names as the primary now,
// whatever the harness saw last.
func (s *Sentinel) CurrentPrimary(tb testing.TB) *Redis {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sentinelFailoverWait)
	defer cancel()
	var addr string
	err := Poll(ctx, s.Addr, func(c rueidis.Client) (bool, error) {
		var err error
		addr, err = s.masterAddr(ctx, c)
		return err == nil, err
	})
	switch {
	case err != nil:
		tb.Fatalf("redistest: SENTINEL GET-MASTER-ADDR-BY-NAME %s on %s: %v", s.MasterSet, s.Addr, err)
	case addr == s.Primary.Addr:
		return s.Primary
	case addr == s.Replica.Addr:
		return s.Replica
	}
	tb.Fatalf("redistest: the sentinel names %s as the primary, neither %s nor %s", addr, s.Primary.Addr, s.Replica.Addr)
	return nil
}

// masterAddr asks the sentinel for the primary's host:port.
func (s *Sentinel) masterAddr(ctx context.Context, c rueidis.Client) (string, error) {
	hp, err := c.Do(ctx, c.B().SentinelGetMasterAddrByName().Master(s.MasterSet).Build()).AsStrSlice()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME answered %q", hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// waitReady waits until the sentinel names s.Primary as the primary and
// lists s.Replica as a healthy replica of it: flags "slave" (not down or
// disconnected), reporting the role itself, its link to s.Primary up. A
// failover can then promote it at once.
func (s *Sentinel) waitReady(ctx context.Context) error {
	var last string
	err := Poll(ctx, s.Addr, func(c rueidis.Client) (bool, error) {
		if addr, err := s.masterAddr(ctx, c); err != nil || addr != s.Primary.Addr {
			if err == nil { // an error is reported beside last: keep what was seen
				last = fmt.Sprintf("primary %q", addr)
			}
			return false, err
		}
		replicas, err := c.Do(ctx, c.B().SentinelReplicas().Master(s.MasterSet).Build()).ToArray()
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("no replica %s", s.Replica.Addr)
		for _, r := range replicas {
			m, err := r.AsStrMap()
			if err != nil || m["name"] != s.Replica.Addr {
				continue
			}
			last = fmt.Sprintf("replica %s: flags %q, role-reported %q, master-link-status %q, master %s:%s",
				m["name"], m["flags"], m["role-reported"], m["master-link-status"], m["master-host"], m["master-port"])
			return m["flags"] == "slave" && m["role-reported"] == "slave" && m["master-link-status"] == "ok" &&
				net.JoinHostPort(m["master-host"], m["master-port"]) == s.Primary.Addr, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the sentinel at %s does not report a healthy replica of %s (last seen: %s): %w",
			s.Addr, s.Primary.Addr, last, err)
	}
	return nil
}

// roleIs reports whether a ROLE reply names role.
func roleIs(reply []rueidis.RedisMessage, role string) bool {
	if len(reply) == 0 {
		return false
	}
	got, err := reply[0].ToString()
	return err == nil && got == role
}
