package fairrw_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
)

// TestLockInfoJSON: Inspect's result marshals with words for modes and
// milliseconds for durations, and prints on one line.
func TestLockInfoJSON(t *testing.T) {
	info := fairrw.LockInfo{
		Name: "orders", Policy: "phase-fair", Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		Holders:        []fairrw.HolderInfo{{Owner: "c:1", Mode: fairrw.Write, Holds: 2, Remaining: 1500 * time.Millisecond}},
		WaitingWriters: []fairrw.WaiterInfo{{Owner: "c:2", Remaining: 29 * time.Second, Lease: 30 * time.Second}},
		WaitingReaders: []fairrw.WaiterInfo{{Owner: "c:3", Remaining: time.Second, Admitted: true}},
		Token:          42,
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"orders","policy":"phase-fair","time":"2026-11-25T12:00:00Z",` +
		`"holders":[{"owner":"c:1","mode":"write","holds":2,"remaining_ms":1500}],` +
		`"waiting_writers":[{"owner":"c:2","remaining_ms":29000,"lease_ms":30000}],` +
		`"waiting_readers":[{"owner":"c:3","remaining_ms":1000,"admitted":true}],"token":42}`
	if string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
	if p := (&info).String(); !strings.Contains(p, "orders (phase-fair): write c:1 x2 1.5s; waiting writers c:2 (29s)") {
		t.Fatalf("String = %q", p)
	}
	if fairrw.Read.String() != "read" || fairrw.Mode(0).String() != "invalid" {
		t.Fatalf("Mode.String: %q, %q", fairrw.Read, fairrw.Mode(0))
	}
}
