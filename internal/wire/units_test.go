package wire

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/lua"
)

// TestHoldMillis: a hold's time on the wire is rounded up and carries
// hidden.LeaseMargin, so Redis never ends it before the Lease's Deadline.
func TestHoldMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "5"},
		{time.Microsecond, "6"},
		{time.Millisecond, "6"},
		{1500 * time.Microsecond, "7"},
		{30 * time.Second, "30005"},
		{30*time.Second + time.Nanosecond, "30006"},
	} {
		if got := HoldMillis(c.d); got != c.want {
			t.Errorf("HoldMillis(%v) = %s, want %s", c.d, got, c.want)
		}
	}
}

// TestMillis: lifetimes and windows are truncated to whole milliseconds,
// never below 1 (PX refuses 0).
func TestMillis(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "1"}, {-time.Second, "1"}, {time.Millisecond, "1"}, {1999 * time.Microsecond, "1"}, {2 * time.Second, "2000"}} {
		if got := millis(c.d); got != c.want {
			t.Errorf("millis(%v) = %s, want %s", c.d, got, c.want)
		}
	}
}

// TestPolicyRecord: a record names the policy and, from protocol 2 on, the
// protocol; a record without one, or with something else after a slash, is
// protocol 1's policy as written.
func TestPolicyRecord(t *testing.T) {
	for _, c := range []struct {
		policy   string
		protocol int
		record   string
	}{
		{"writer-preferring", 1, "writer-preferring"},
		{"phase-fair", 2, "phase-fair/2"},
		{"writer-preferring", 13, "writer-preferring/13"},
	} {
		if got := PolicyRecord(c.policy, c.protocol); got != c.record {
			t.Errorf("PolicyRecord(%q, %d) = %q, want %q", c.policy, c.protocol, got, c.record)
		}
		if p, v := ParsePolicyRecord(c.record); p != c.policy || v != c.protocol {
			t.Errorf("ParsePolicyRecord(%q) = %q, %d", c.record, p, v)
		}
	}
	for _, rec := range []string{"a/b", "x/1", "x/0", "/"} {
		if p, v := ParsePolicyRecord(rec); p != rec || v != 1 {
			t.Errorf("ParsePolicyRecord(%q) = %q, %d, want it as protocol 1's", rec, p, v)
		}
	}
}

// TestTokenReserveInScripts: the scripts reserve the range the client
// hands out (common.lua's RESERVE); the fast path reserves what its
// attempt asks (ARGV[12]) and keeps the fence key a second (its literal
// '1000'), which covers a range of TokenReserve microseconds.
func TestTokenReserveInScripts(t *testing.T) {
	common, fast := lua.Source("common"), lua.Source("fair_acquire_fast")
	if want := fmt.Sprintf("local RESERVE = %d\n", TokenReserve); !strings.Contains(common, want) {
		t.Errorf("common.lua does not define %q", want)
	}
	for _, want := range []string{"local reserve = tonumber(ARGV[12])", "'px', '1000', 'get'"} {
		if !strings.Contains(fast, want) {
			t.Errorf("fair_acquire_fast.lua has no %q", want)
		}
	}
	if TokenReserve > 1000 {
		t.Errorf("TokenReserve %d: the fast path's second of keep no longer covers a range", TokenReserve)
	}
}
