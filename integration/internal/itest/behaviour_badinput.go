package itest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
	fwire "github.com/fairrw/rwlock/internal/wire"
)

// keyState is what a snapshot records of one key.
type keyState struct {
	typ  string
	dump string // DUMP: the value, as Redis serializes it
	ttl  bool   // whether the key has a TTL (not how much is left)
}

type Keyspace map[string]keyState

// badEnv is a private redis-server (so that FLUSHALL and INFO are the
// test's own) and a raw client to inspect it.
type BadEnv struct {
	R   *redistest.Redis
	Raw rueidis.Client
}

func NewBadEnv(t *testing.T) *BadEnv {
	r := redistest.StartProcess(t)
	return &BadEnv{R: r, Raw: r.Client(t, func(o *rueidis.ClientOption) { o.DisableCache = true })}
}

func (e *BadEnv) Do(t testing.TB, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	res := e.Raw.Do(TestCtx(t), cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("%v: %v", cmd.Commands(), err)
	}
	return res
}

// flush empties the server: each subtest starts from nothing.
func (e *BadEnv) Flush(t testing.TB) {
	t.Helper()
	e.Do(t, e.Raw.B().Flushall().Build())
}

// client returns a Client with policy p whose latches outlive any subtest
// (so that none expires between two snapshots).
func (e *BadEnv) Client(t testing.TB, p fairrw.Policy, opts ...fairrw.Option) *fairrw.Client {
	return NewClient(t, e.R, Transports[0], append([]fairrw.Option{fairrw.WithPolicy(p), fairrw.WithUnlockTimeout(time.Minute)}, opts...)...)
}

// snapshot reads the whole keyspace with SCAN, TYPE, DUMP and PTTL.
func (e *BadEnv) Snapshot(t testing.TB) Keyspace {
	t.Helper()
	ks := Keyspace{}
	cursor := uint64(0)
	for {
		entry, err := e.Raw.Do(TestCtx(t), e.Raw.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		for _, k := range entry.Elements {
			typ, err := e.Raw.Do(TestCtx(t), e.Raw.B().Type().Key(k).Build()).ToString()
			if err != nil {
				t.Fatalf("TYPE %q: %v", k, err)
			}
			dump, err := e.Raw.Do(TestCtx(t), e.Raw.B().Dump().Key(k).Build()).ToString()
			if rueidis.IsRedisNil(err) {
				continue // expired since SCAN
			}
			if err != nil {
				t.Fatalf("DUMP %q: %v", k, err)
			}
			pttl, err := e.Raw.Do(TestCtx(t), e.Raw.B().Pttl().Key(k).Build()).AsInt64()
			if err != nil {
				t.Fatalf("PTTL %q: %v", k, err)
			}
			if pttl == -2 {
				continue
			}
			ks[k] = keyState{typ: typ, dump: dump, ttl: pttl >= 0}
		}
		if entry.Cursor == 0 {
			return ks
		}
		cursor = entry.Cursor
	}
}

// without returns ks without the keys that start with one of prefixes.
func (ks Keyspace) Without(prefixes ...string) Keyspace {
	out := Keyspace{}
	for k, v := range ks {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}

// withoutMarkers returns ks without the owner markers that have a TTL: an
// acquire that ends with an error gives its owner up, and the marker it
// leaves (fwire.OwnerMarker) expires on its own (the give-up's unlock
// latch is deleted at once: compare e.settled). A marker without a TTL
// stays in, so that a comparison reports it.
func (ks Keyspace) WithoutMarkers() Keyspace {
	out := Keyspace{}
	for k, v := range ks {
		if !strings.HasPrefix(k, fwire.OwnerMarkerPrefix+":") || !v.ttl {
			out[k] = v
		}
	}
	return out
}

// wantSame fails when after differs from before.
func WantSame(t testing.TB, what string, before, after Keyspace) {
	t.Helper()
	var diffs []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%q (%s) was deleted", k, b.typ))
		case a.typ != b.typ:
			diffs = append(diffs, fmt.Sprintf("%q changed type %s -> %s", k, b.typ, a.typ))
		case a.dump != b.dump:
			diffs = append(diffs, fmt.Sprintf("%q (%s) changed value", k, b.typ))
		case a.ttl != b.ttl:
			diffs = append(diffs, fmt.Sprintf("%q (%s) TTL present %v -> %v", k, b.typ, b.ttl, a.ttl))
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q (%s) was created", k, a.typ))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%s changed Redis:\n\t%s", what, strings.Join(diffs, "\n\t"))
	}
}

// settled waits until no unlock latch is left (the janitor deletes them
// right after their unlock answered) and returns the keyspace then.
func (e *BadEnv) Settled(t testing.TB) Keyspace {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ks := e.Snapshot(t)
		left := 0
		for k := range ks {
			if strings.HasPrefix(k, compat.UnlockLatchPrefix+":") {
				left++
			}
		}
		if left == 0 {
			return ks
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d unlock latches left", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// inspection are the commands the test itself sends, and what a
// connection sends on its own (handshake, health checks): anything else
// counts as sent by fairrw.
var inspection = map[string]bool{
	"scan": true, "type": true, "dump": true, "pttl": true, "info": true, "ping": true, "hello": true,
	"flushall": true, "select": true, "readonly": true, "cluster|slots": true, "cluster|shards": true,
}

type serverStats struct {
	Calls       map[string]int64 // INFO commandstats
	connections int64            // total_connections_received
}

func (e *BadEnv) Stats(t testing.TB) serverStats {
	t.Helper()
	info, err := e.Raw.Do(TestCtx(t), e.Raw.B().Info().Section("commandstats").Section("stats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	s := serverStats{Calls: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			s.connections, _ = strconv.ParseInt(v, 10, 64)
		}
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				s.Calls[name], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return s
}

// wantNothingSent fails when a command other than the test's inspection
// ran since before, or (newConns false) a connection was opened.
func (e *BadEnv) WantNothingSent(t testing.TB, what string, before serverStats, newConns bool) {
	t.Helper()
	after := e.Stats(t)
	var sent []string
	for name, n := range after.Calls {
		if d := n - before.Calls[name]; d > 0 && !inspection[name] && !strings.HasPrefix(name, "client|") {
			sent = append(sent, fmt.Sprintf("%s x%d", name, d))
		}
	}
	if len(sent) > 0 {
		sort.Strings(sent)
		t.Fatalf("%s sent commands: %s", what, strings.Join(sent, ", "))
	}
	if !newConns && after.connections != before.connections {
		t.Fatalf("%s opened %d connections", what, after.connections-before.connections)
	}
}

// bystanders writes keys that no bad call may touch: one of each type,
// with and without a TTL.
func (e *BadEnv) Bystanders(t testing.TB) {
	t.Helper()
	b := e.Raw.B()
	for _, cmd := range []rueidis.Completed{
		b.Set().Key("bystander:string").Value("v").Build(),
		b.Set().Key("bystander:ttl").Value("v").Px(10 * time.Minute).Build(),
		b.Hset().Key("bystander:hash").FieldValue().FieldValue("mode", "write").Build(),
		b.Rpush().Key("bystander:list").Element("a", "b").Build(),
		b.Zadd().Key("bystander:zset").ScoreMember().ScoreMember(1, "a").Build(),
	} {
		e.Do(t, cmd)
	}
}
