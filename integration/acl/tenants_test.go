package acl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/integration/internal/itest"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/hidden"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	wirekeys "github.com/fairrw/rwlock/internal/wire"
)

// respConn is a bare RESP connection, for commands a tenant may try by
// hand: no client library between the test and what Redis answers.
type respConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
}

// dialRESP connects to addr, and authenticates as user unless user is "".
func dialRESP(t *testing.T, addr, user, password string) *respConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &respConn{addr: addr, conn: conn, r: bufio.NewReader(conn)}
	t.Cleanup(func() { _ = c.conn.Close() })
	if user != "" {
		if reply, err := c.do("AUTH", user, password); err != nil || reply != "OK" {
			t.Fatalf("AUTH %s: %q, %v", user, reply, err)
		}
	}
	return c
}

// do sends one command and returns its reply, flattened to text; a Redis
// error reply is returned as an error of its text.
func (c *respConn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return "", err
	}
	return c.read()
}

// read reads one RESP2 or RESP3 reply.
func (c *respConn) read() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '-', '!':
		return "", redisError(body)
	case '+', ':', ',', '(', '#', '_':
		return body, nil
	case '$', '=':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := c.read()
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", fmt.Errorf("unknown reply %q", line)
}

// redisError is an error reply of Redis.
type redisError string

func (e redisError) Error() string { return string(e) }

// rawTemplates are the commands an attacker allowed every command of
// docs/acl.md's tenant and policy blocks tries on the victim's keys and
// channels: every command of those blocks that takes a key or a channel,
// in each of its key positions (the test fails if the blocks grant a
// command that is missing here, or in keyless).
type rawTemplates struct {
	byCommand map[string][]func(key, own, sha string) []string
	channel   map[string]func(channel string) []string
	keyless   []string // granted, with no key or channel: nothing to try
}

var tenantRaw = rawTemplates{
	byCommand: map[string][]func(k, own, sha string) []string{
		"del":         {func(k, _, _ string) []string { return []string{"DEL", k} }},
		"exists":      {func(k, _, _ string) []string { return []string{"EXISTS", k} }},
		"get":         {func(k, _, _ string) []string { return []string{"GET", k} }},
		"set":         {func(k, _, _ string) []string { return []string{"SET", k, "x"} }},
		"type":        {func(k, _, _ string) []string { return []string{"TYPE", k} }},
		"hexists":     {func(k, _, _ string) []string { return []string{"HEXISTS", k, "f"} }},
		"hget":        {func(k, _, _ string) []string { return []string{"HGET", k, "f"} }},
		"hgetall":     {func(k, _, _ string) []string { return []string{"HGETALL", k} }},
		"hmget":       {func(k, _, _ string) []string { return []string{"HMGET", k, "f"} }},
		"hset":        {func(k, _, _ string) []string { return []string{"HSET", k, "f", "x"} }},
		"hdel":        {func(k, _, _ string) []string { return []string{"HDEL", k, "f"} }},
		"hincrby":     {func(k, _, _ string) []string { return []string{"HINCRBY", k, "f", "1"} }},
		"hkeys":       {func(k, _, _ string) []string { return []string{"HKEYS", k} }},
		"hlen":        {func(k, _, _ string) []string { return []string{"HLEN", k} }},
		"pttl":        {func(k, _, _ string) []string { return []string{"PTTL", k} }},
		"pexpiretime": {func(k, _, _ string) []string { return []string{"PEXPIRETIME", k} }},
		"pexpire":     {func(k, _, _ string) []string { return []string{"PEXPIRE", k, "600000"} }},
		"pexpireat":   {func(k, _, _ string) []string { return []string{"PEXPIREAT", k, "99999999999999"} }},
		"zrange":      {func(k, _, _ string) []string { return []string{"ZRANGE", k, "0", "-1"} }},
		"zadd":        {func(k, _, _ string) []string { return []string{"ZADD", k, "1", "m"} }},
		"zcard":       {func(k, _, _ string) []string { return []string{"ZCARD", k} }},
		"zrem":        {func(k, _, _ string) []string { return []string{"ZREM", k, "m"} }},
		"zscore":      {func(k, _, _ string) []string { return []string{"ZSCORE", k, "m"} }},
		"zunionstore": {
			func(k, own, _ string) []string { return []string{"ZUNIONSTORE", own, "1", k} },
			func(k, own, _ string) []string { return []string{"ZUNIONSTORE", k, "1", own} },
		},
		"eval": {func(k, _, _ string) []string { return []string{"EVAL", "return redis.call('TYPE', KEYS[1])", "1", k} }},
		"eval_ro": {func(k, _, _ string) []string {
			return []string{"EVAL_RO", "return redis.call('TYPE', KEYS[1])", "1", k}
		}},
		"evalsha":    {func(k, _, sha string) []string { return []string{"EVALSHA", sha, "1", k} }},
		"evalsha_ro": {func(k, _, sha string) []string { return []string{"EVALSHA_RO", sha, "1", k} }},
	},
	channel: map[string]func(ch string) []string{
		"publish":   func(ch string) []string { return []string{"PUBLISH", ch, "0"} },
		"subscribe": func(ch string) []string { return []string{"SUBSCRIBE", ch} },
	},
	keyless: []string{"ping", "time", "wait", "unsubscribe"},
}

// ungranted are commands no tenant block grants, tried with the victim's
// namespace ns, one of its keys k and channels ch: reading the key space,
// watching it (client tracking in every form: BCAST on the victim's
// prefix or on everything, a redirect into another connection), copying,
// dumping, or a script that names the victim's key without declaring it.
func ungranted(ns, k, ch string) [][]string {
	return [][]string{
		{"KEYS", "*"}, {"SCAN", "0"}, {"RANDOMKEY"}, {"DBSIZE"}, {"INFO"},
		{"CLIENT", "TRACKING", "ON"},
		{"CLIENT", "TRACKING", "ON", "OPTIN"},
		{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", ns + ":"},
		{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "fairrw:"},
		{"CLIENT", "TRACKING", "ON", "BCAST"},
		{"CLIENT", "TRACKING", "ON", "REDIRECT", "1", "BCAST", "PREFIX", ns + ":"},
		{"CLIENT", "CACHING", "YES"},
		{"CLIENT", "LIST"}, {"CLIENT", "KILL", "USER", ns}, {"CLIENT", "ID"},
		{"PSUBSCRIBE", "*"}, {"PUBSUB", "CHANNELS"}, {"PUBSUB", "NUMSUB", ch},
		{"SSUBSCRIBE", ch}, {"SPUBLISH", ch, "0"},
		{"MONITOR"}, {"CONFIG", "GET", "*"}, {"ACL", "LIST"}, {"ACL", "WHOAMI"}, {"ACL", "SETUSER", ns, "~*"},
		{"FLUSHALL"}, {"FLUSHDB"}, {"SCRIPT", "FLUSH"}, {"SCRIPT", "LOAD", "return 1"},
		{"DUMP", k}, {"RESTORE", k, "0", "x"}, {"RENAME", k, k + "2"}, {"COPY", k, k + "2"},
		{"OBJECT", "ENCODING", k}, {"MEMORY", "USAGE", k}, {"SORT", k}, {"GETDEL", k}, {"EXPIRE", k, "1"},
		{"PERSIST", k}, {"UNLINK", k}, {"TOUCH", k}, {"HSCAN", k, "0"}, {"ZSCAN", k, "0"}, {"SELECT", "1"},
		{"MULTI"}, {"CLIENT", "PAUSE", "1000"}, {"CLIENT", "NO-EVICT", "ON"},
		{"CONFIG", "SET", "maxclients", "1"}, {"SCRIPT", "KILL"}, {"FUNCTION", "FLUSH"}, {"SHUTDOWN", "NOSAVE"},
		{"SUBSCRIBE", "__redis__:invalidate"}, {"PUBLISH", "__redis__:invalidate", k},
		{"EVAL", "return redis.call('TYPE', '" + k + "')", "0"},
		{"EVAL", "return redis.call('PUBLISH', '" + ch + "', '0')", "0"},
	}
}

// tenantKeys are the keys and channels of the names of a tenant, of every
// family docs/acl.md's table lists, whether they exist now or not.
func tenantKeys(names []string) (keys, channels []string) {
	for _, n := range names {
		fk := wirekeys.Fair(n)
		keys = append(keys, n, fk.State, fk.Readers, fk.Queue, fk.Waiting, fk.Admitted, fk.Fence, fk.Channel,
			compat.LeaseKey(n, "owner:1", 1), wirekeys.OwnerMarker(n, "owner:1"), compat.UnlockLatch(n, "req"),
			compat.Channel(n), compat.MutexChannel(n))
		channels = append(channels, fk.Channel, compat.Channel(n), compat.MutexChannel(n))
	}
	return keys, channels
}

// TestACLTenantsOnOneRedis: an operator follows docs/acl.md on one Redis:
// an admin user, the default user locked out, and two tenants, billing and
// shipping, each ONE user of the tenant block and every policy's block,
// without tracking. Then:
//
//   - a connection without credentials can do nothing (NOAUTH), AUTH as
//     default is refused, and New without credentials fails with
//     ErrPermission; a connection made before the lock-down stays open
//     with the user's new rights (none) until CLIENT KILL USER default;
//   - the documented inspector and operator users cannot use client
//     tracking either;
//   - each tenant, under every policy and the Mutex, does every operation
//     on its own locks (a plain and a braced name): Lock, a TryLock refused
//     beside it, Inspect, a renewal by the watchdog, a further hold (a
//     downgrade, or a reentrant Mutex hold), the release waking a waiter of
//     another of its Clients (not its timer), shared reads, ForceUnlock
//     ending the holder's lease; ACL LOG then holds no refusal of the
//     tenants but those of connecting (CLIENT TRACKING, which made each
//     Client connect without it, and rueidis's CLUSTER SLOTS);
//   - each tenant, as an attacker of the other's locks held meanwhile, is
//     refused every library call (ErrPermission, naming the lock), every
//     command its blocks grant sent with each of the victim's keys or
//     channels (NOPERM), and every command they do not grant (client
//     tracking in every form, BCAST on the victim's prefix included); the
//     victim's keys are unchanged (DUMP, PTTL) and its leases live.
func TestACLTenantsOnOneRedis(t *testing.T) {
	r := redistest.StartProcess(t)
	ctx := itest.TestCtx(t)
	bootstrap := r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })
	adminPW := itest.AclPassword()
	itest.SetUser(t, bootstrap, "billing", "", adminPW, nil, "admin")
	admin := r.Client(t, func(o *rueidis.ClientOption) {
		o.DisableCache, o.Username, o.Password = true, "admin", adminPW
	})
	before := dialRESP(t, r.Addr, "", "") // the default user, before the lock-down
	if _, err := before.do("PING"); err != nil {
		t.Fatal(err)
	}
	itest.SetUser(t, admin, "billing", "", "", nil, "default")
	t.Cleanup(func() {
		// The harness's own connections use the default user.
		_ = admin.Do(context.Background(), admin.B().Arbitrary("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all").Build()).Error()
	})
	tenants := []string{"billing", "shipping"}
	pw := map[string]string{}
	for _, ns := range tenants {
		pw[ns] = itest.AclPassword()
		itest.SetTenant(t, admin, ns, "", pw[ns], everyPolicy...)
	}
	passwords := []string{adminPW, pw["billing"], pw["shipping"]}
	adminDo := func(args ...string) (rueidis.RedisMessage, error) {
		return admin.Do(ctx, admin.B().Arbitrary(args...).Build()).ToMessage()
	}
	t.Run("inspector and operator", func(t *testing.T) {
		ipw, opw := itest.AclPassword(), itest.AclPassword()
		itest.SetUser(t, admin, "billing", "", ipw, nil, "inspector")
		itest.SetUser(t, admin, "billing", "", opw, nil, "operator")
		for user, password := range map[string]string{"billing-inspector": ipw, "locks-operator": opw} {
			conn := dialRESP(t, r.Addr, user, password)
			for _, args := range [][]string{{"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "other:"}, {"CLIENT", "TRACKING", "ON"}, {"KEYS", "*"}} {
				if reply, err := conn.do(args...); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
					t.Errorf("%s's %v: %q, %v; want NOPERM", user, args, reply, err)
				}
			}
		}
	})

	t.Run("default user", func(t *testing.T) {
		anon := dialRESP(t, r.Addr, "", "")
		for _, args := range [][]string{{"PING"}, {"GET", "billing:x"}, {"KEYS", "*"}, {"CLIENT", "TRACKING", "ON", "BCAST"}, {"HELLO", "3"}} {
			if reply, err := anon.do(args...); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
				t.Errorf("%v without credentials: %q, %v; want NOAUTH", args, reply, err)
			}
		}
		for _, args := range [][]string{{"AUTH", "default", "x"}, {"AUTH", "default", ""}, {"AUTH", "admin", "x"}, {"AUTH", "shipping", pw["billing"]}} {
			if reply, err := anon.do(args...); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
				t.Errorf("AUTH %s: %q, %v; want WRONGPASS", args[1], reply, err)
			}
		}
		c, err := fairrw.New(fairrw.WithClientOption(r.ClientOption()))
		if err == nil {
			defer c.Close()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			err = c.Ping(cctx)
		}
		refused(t, "a Client without credentials", "", err, passwords...)
		// Documented: connections made before stay open, with the
		// user's new rights (none), until killed.
		if reply, err := before.do("PING"); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("a connection of the default user made before the lock-down: %q, %v; want it open, and refused", reply, err)
		}
		if _, err := adminDo("CLIENT", "KILL", "USER", "default"); err != nil {
			t.Fatal(err)
		}
		if reply, err := before.do("PING"); err == nil {
			t.Errorf("a connection of the default user after CLIENT KILL USER default: %q, want it closed", reply)
		}
	})

	if _, err := adminDo("ACL", "LOG", "RESET"); err != nil {
		t.Fatal(err)
	}
	// Every own-lock operation, each tenant at once.
	t.Run("own locks", func(t *testing.T) {
		for _, ns := range tenants {
			t.Run(ns, func(t *testing.T) {
				t.Parallel()
				for _, tg := range aclTargets {
					ownLockOperations(t, r, tg, ns, pw[ns])
				}
			})
		}
	})
	// The only refusals of the tenants: while connecting, CLIENT TRACKING
	// (then the Client connects without it) and CLUSTER SLOTS (how rueidis
	// tells a single server from a cluster).
	entries, err := admin.Do(ctx, admin.B().Arbitrary("ACL", "LOG").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		f, err := e.AsMap()
		if err != nil {
			t.Fatal(err)
		}
		username, object, cnt := f["username"], f["object"], f["count"]
		user, _ := username.ToString()
		what, _ := object.ToString()
		count, _ := cnt.AsInt64()
		if slices.Contains(tenants, user) && what != "client|tracking" && what != "cluster|slots" {
			t.Errorf("ACL LOG: the tenant %s's own operations were refused %q %d times", user, what, count)
		}
	}

	for i, victim := range tenants {
		attacker := tenants[1-i]
		t.Run(attacker+" against "+victim, func(t *testing.T) {
			crossTenantAttempts(t, r, admin, victim, attacker, pw, passwords)
		})
	}
}

// lockFor is one acquire under tg: a write (the Mutex's lock) unless read.
func lockFor(ctx context.Context, c *fairrw.Client, tg aclTarget, name string, read, try bool, opts ...fairrw.AcquireOption) (*fairrw.Lease, error) {
	switch {
	case tg.mutex && try:
		return c.Mutex(name).TryLock(ctx, opts...)
	case tg.mutex:
		return c.Mutex(name).Lock(ctx, opts...)
	case read && try:
		return c.RWMutex(name).TryRLock(ctx, opts...)
	case read:
		return c.RWMutex(name).RLock(ctx, opts...)
	case try:
		return c.RWMutex(name).TryLock(ctx, opts...)
	}
	return c.RWMutex(name).Lock(ctx, opts...)
}

// ownLockOperations: the tenant ns, as its user, does every operation of
// tg on two names of its own (plain and braced), with two Clients.
func ownLockOperations(t *testing.T, r *redistest.Redis, tg aclTarget, ns, password string) {
	t.Helper()
	// The watchdog renews every third of the lease: the test waits for a
	// renewal, not a time, so that a loaded machine only makes it slower.
	const lease = 2 * time.Second
	opts := []fairrw.Option{fairrw.WithPolicy(tg.policy), fairrw.WithNamespace(ns)}
	a := itest.AclClient(t, r, ns, password, append(opts, fairrw.WithLeaseTime(lease))...)
	b := itest.AclClient(t, r, ns, password, opts...)
	ctx := itest.TestCtx(t)
	for _, name := range []string{ns + ":" + tg.role + ":x", ns + ":{" + tg.role + "}:y"} {
		what := func(op string) string { return fmt.Sprintf("%s %s %s", tg.role, name, op) }
		must := func(op string) func(*fairrw.Lease, error) *fairrw.Lease {
			return func(l *fairrw.Lease, err error) *fairrw.Lease {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what(op), err)
				}
				return l
			}
		}
		l := must("Lock")(lockFor(ctx, a, tg, name, false, false))
		if _, err := lockFor(ctx, b, tg, name, false, true); !errors.Is(err, fairrw.ErrNotAcquired) {
			t.Errorf("%s: %v, want ErrNotAcquired", what("TryLock beside a write"), err)
		}
		info, err := b.Inspect(ctx, name)
		if err != nil || len(info.Holders) != 1 {
			t.Errorf("%s: %+v, %v; want one holder", what("Inspect"), info, err)
		}
		waited := make(chan error, 1)
		go func() {
			w, err := lockFor(ctx, b, tg, name, false, false)
			if err == nil {
				if by := hidden.WokenBy(w); by == "timer" || by == "" {
					err = fmt.Errorf("woken by %q, want the release", by)
				}
				if uerr := w.Unlock(ctx); err == nil {
					err = uerr
				}
			}
			waited <- err
		}()
		granted := l.Deadline()
		for !l.Deadline().After(granted) { // the watchdog's renewal, as the tenant
			select {
			case <-l.Done():
				t.Fatalf("%s: %v", what("the lease, renewed"), l.Err())
			case <-ctx.Done():
				t.Fatalf("%s: not renewed", what("the lease"))
			case <-time.After(20 * time.Millisecond):
			}
		}
		if info, err := b.Inspect(ctx, name); err != nil || len(info.Holders) != 1 {
			t.Errorf("%s: %+v, %v; want one holder", what("Inspect after a renewal"), info, err)
		}
		select {
		case err := <-waited:
			t.Fatalf("%s: returned while the lock was held: %v", what("the waiter"), err)
		default:
		}
		var further *fairrw.Lease
		if tg.mutex {
			further = must("a reentrant hold")(l.Lock(ctx))
		} else {
			further = must("a downgrade")(l.RLock(ctx))
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("%s: %v", what("Unlock"), err)
		}
		if err := further.Unlock(ctx); err != nil {
			t.Fatalf("%s: %v", what("Unlock of the further hold"), err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("%s: %v", what("the waiter of another Client"), err)
		}

		if !tg.mutex {
			r1 := must("RLock")(lockFor(ctx, a, tg, name, true, false))
			r2 := must("TryRLock beside a read")(lockFor(ctx, b, tg, name, true, true))
			r3 := must("RLock of the same Client")(lockFor(ctx, a, tg, name, true, false))
			for _, rl := range []*fairrw.Lease{r1, r2, r3} {
				if err := rl.Unlock(ctx); err != nil {
					t.Fatalf("%s: %v", what("read Unlock"), err)
				}
			}
		}

		held := must("Lock to force-unlock")(lockFor(ctx, a, tg, name, false, false))
		if tg.mutex {
			err = b.Mutex(name).ForceUnlock(ctx)
		} else {
			err = b.RWMutex(name).ForceUnlock(ctx, fairrw.Write)
		}
		if err != nil {
			t.Fatalf("%s: %v", what("ForceUnlock"), err)
		}
		select {
		case <-held.Done():
			if !errors.Is(held.Err(), fairrw.ErrLeaseLost) {
				t.Errorf("%s: %v, want ErrLeaseLost", what("the force-unlocked lease"), held.Err())
			}
		case <-ctx.Done():
			t.Fatalf("%s: still held", what("the force-unlocked lease"))
		}
		if info, err := b.Inspect(ctx, name); err != nil || len(info.Holders) != 0 {
			t.Errorf("%s: %+v, %v; want no holder", what("Inspect at the end"), info, err)
		}
	}
}

// crossTenantAttempts: attacker tries victim's held locks through the
// library and by hand (see TestACLTenantsOnOneRedis).
func crossTenantAttempts(t *testing.T, r *redistest.Redis, admin rueidis.Client, victim, attacker string, pw map[string]string, passwords []string) {
	ctx := itest.TestCtx(t)
	// The victim holds a lock under every policy and the Mutex, each for a
	// fixed lease (no renewal: the keys' PTTL only goes down), and has
	// just released one (its unlock latch).
	var names []string
	var leases []*fairrw.Lease
	for _, tg := range aclTargets {
		c := itest.AclClient(t, r, victim, pw[victim], fairrw.WithPolicy(tg.policy), fairrw.WithNamespace(victim))
		for _, name := range []string{victim + ":held:" + tg.role, victim + ":{held}:" + tg.role} {
			l, err := lockFor(ctx, c, tg, name, false, false, fairrw.WithLease(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, l)
			names = append(names, name)
			if !tg.mutex {
				rd, err := l.RLock(ctx, fairrw.WithLease(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				leases = append(leases, rd)
			}
		}
	}
	// A fencing token is kept a second past the clock reaching it (tokens
	// follow Redis's clock): on a loaded machine the attempts below outlast
	// it, and the victim's fence keys would expire by themselves, which is
	// no attacker's doing. They are kept a minute here, as the holds are.
	keys, err := admin.Do(ctx, admin.B().Keys().Pattern("*"+victim+":held*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasSuffix(k, ":fence") {
			if err := admin.Do(ctx, admin.B().Pexpire().Key(k).Milliseconds(time.Minute.Milliseconds()).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := aclSnapshot(t, admin, "*"+victim+":held*")

	// The library, without a namespace: the ACL alone stands in the way.
	for _, tg := range aclTargets {
		x := itest.AclClient(t, r, attacker, pw[attacker], fairrw.WithPolicy(tg.policy))
		for _, name := range names {
			try := func(what string, f func(ctx context.Context) error) {
				t.Helper()
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				refused(t, fmt.Sprintf("%s's %s %s under %s", attacker, what, name, tg.role), name, f(cctx), passwords...)
			}
			if tg.mutex {
				try("Mutex.TryLock", func(ctx context.Context) error { _, err := x.Mutex(name).TryLock(ctx); return err })
				try("Mutex.Lock", func(ctx context.Context) error { _, err := x.Mutex(name).Lock(ctx); return err })
				try("Mutex.ForceUnlock", func(ctx context.Context) error { return x.Mutex(name).ForceUnlock(ctx) })
			} else {
				m := x.RWMutex(name)
				try("TryLock", func(ctx context.Context) error { _, err := m.TryLock(ctx); return err })
				try("TryRLock", func(ctx context.Context) error { _, err := m.TryRLock(ctx); return err })
				try("Lock", func(ctx context.Context) error { _, err := m.Lock(ctx); return err })
				try("RLock", func(ctx context.Context) error { _, err := m.RLock(ctx); return err })
				try("ForceUnlock(Write)", func(ctx context.Context) error { return m.ForceUnlock(ctx, fairrw.Write) })
				try("ForceUnlock(Read)", func(ctx context.Context) error { return m.ForceUnlock(ctx, fairrw.Read) })
			}
			try("Inspect", func(ctx context.Context) error { _, err := x.Inspect(ctx, name); return err })
		}
	}

	// By hand: every command the attacker's blocks grant, on each of the
	// victim's keys and channels, and the commands they do not grant.
	granted := map[string]bool{}
	for _, role := range append([]string{"tenant"}, everyPolicy...) {
		for _, line := range aclLines(t, role) {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "+") {
					granted[strings.TrimPrefix(f, "+")] = true
				}
			}
		}
	}
	for cmd := range granted {
		_, byKey := tenantRaw.byCommand[cmd]
		_, byChannel := tenantRaw.channel[cmd]
		if !byKey && !byChannel && !slices.Contains(tenantRaw.keyless, cmd) {
			t.Errorf("docs/acl.md grants tenants %q, which this test does not try on another tenant's keys: add it", cmd)
		}
	}
	sha, err := admin.Do(ctx, admin.B().ScriptLoad().Script("return redis.call('TYPE', KEYS[1])").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	keys, channels := tenantKeys(names)
	for k := range before {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	conn := dialRESP(t, r.Addr, attacker, pw[attacker])
	own := attacker + ":own"
	tries, unexpected := 0, 0
	expectRefused := func(args []string) {
		t.Helper()
		tries++
		reply, err := conn.do(args...)
		var rerr redisError
		// A script refused a key or channel it did not declare says so
		// without the NOPERM code.
		if errors.As(err, &rerr) && (strings.HasPrefix(string(rerr), "NOPERM") ||
			strings.Contains(string(rerr), "can't access") || strings.Contains(string(rerr), "can't publish")) {
			return
		}
		unexpected++
		t.Errorf("%s's %q: %q, %v; want NOPERM", attacker, args, reply, err)
		if !errors.As(err, &rerr) { // the connection may be out of step
			conn = dialRESP(t, r.Addr, attacker, pw[attacker])
		}
	}
	for cmd, templates := range tenantRaw.byCommand {
		if !granted[cmd] {
			t.Errorf("%q is tried as granted, but no tenant block grants it", cmd)
		}
		for _, k := range keys {
			for _, tmpl := range templates {
				expectRefused(tmpl(k, own, sha))
			}
		}
	}
	for _, ch := range channels {
		for _, tmpl := range tenantRaw.channel {
			expectRefused(tmpl(ch))
		}
	}
	for _, args := range ungranted(victim, keys[0], channels[0]) {
		expectRefused(args)
	}
	t.Logf("%s: %d raw commands on %d keys and %d channels of %s, %d not refused", attacker, tries, len(keys), len(channels), victim, unexpected)

	sameKeys(t, victim+"'s keys after "+attacker+"'s attempts", before, aclSnapshot(t, admin, "*"+victim+":held*"))
	var lost []string
	for _, l := range leases {
		select {
		case <-l.Done():
			lost = append(lost, l.Err().Error())
		default:
		}
	}
	if len(lost) != 0 {
		t.Errorf("%s's leases ended: %v", victim, lost)
	}
}
