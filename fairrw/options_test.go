package fairrw_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

func TestNewValidatesOptions(t *testing.T) {
	addr := rueidis.ClientOption{InitAddress: []string{"127.0.0.1:1"}}
	tests := []struct {
		name string
		opts []fairrw.Option
	}{
		{"no client", nil},
		{"nil option", []fairrw.Option{nil}},
		{"both clients", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithClient(nil)}},
		{"nil client", []fairrw.Option{fairrw.WithClient(nil)}},
		{"no address", []fairrw.Option{fairrw.WithClientOption(rueidis.ClientOption{})}},
		{"own invalidation hook", []fairrw.Option{fairrw.WithClientOption(rueidis.ClientOption{InitAddress: addr.InitAddress, OnInvalidations: func([]rueidis.RedisMessage) {}})}},
		// Invalidations come on one connection; calls spread over others
		// could be answered before them (client.go).
		{"pipeline multiplex with tracking", []fairrw.Option{fairrw.WithClientOption(rueidis.ClientOption{InitAddress: addr.InitAddress, PipelineMultiplex: 1})}},
		{"pooled calls with tracking", []fairrw.Option{fairrw.WithClientOption(rueidis.ClientOption{InitAddress: addr.InitAddress, DisableAutoPipelining: true})}},
		{"nil policy", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithPolicy(nil)}},
		{"zero lease", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithLeaseTime(0)}},
		{"negative lease", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithLeaseTime(-time.Second)}},
		{"zero unlock timeout", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithUnlockTimeout(0)}},
		// Spans whose deadlines would overflow time.Duration into the past.
		{"lease time of 292 years", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithLeaseTime(time.Duration(1<<63 - 1))}},
		{"lease time over a year", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithLeaseTime(366 * 24 * time.Hour)}},
		{"unlock timeout of 292 years", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithUnlockTimeout(time.Duration(1<<63 - 1))}},
		{"no replicas to sync", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithSyncReplicas(0, time.Second)}},
		{"no sync timeout", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithSyncReplicas(1, 0)}},
		{"nil tracer provider", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithTracerProvider(nil)}},
		{"empty namespace", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("")}},
		{"namespace with a glob", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("bill*")}},
		{"namespace with a brace", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("{billing}")}},
		{"namespace with a colon", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("billing:eu")}},
		{"namespace of fairrw's keys", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("fairrw_attempt")}},
		{"namespace of Redisson's channels", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace("redisson_rwlock")}},
		{"namespace too long", []fairrw.Option{fairrw.WithClientOption(addr), fairrw.WithNamespace(strings.Repeat("n", 65))}},
		{"unknown publish", []fairrw.Option{fairrw.WithClientOption(addr), hidden.WithPublish("shout").(fairrw.Option)}},
		{"zero slow-answer threshold", []fairrw.Option{fairrw.WithClientOption(addr), hidden.WithSlowAnswer(0).(fairrw.Option)}},
		{"zero clean-up grace", []fairrw.Option{fairrw.WithClientOption(addr), hidden.WithCleanupGrace(0).(fairrw.Option)}},
		{"negative clean-up grace", []fairrw.Option{fairrw.WithClientOption(addr), hidden.WithCleanupGrace(-time.Millisecond).(fairrw.Option)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := fairrw.New(tt.opts...)
			if !errors.Is(err, fairrw.ErrInvalidOption) {
				if c != nil {
					_ = c.Close()
				}
				t.Fatalf("New: %v, want ErrInvalidOption", err)
			}
		})
	}
}

func TestModeString(t *testing.T) {
	if fairrw.Read.String() != "read" || fairrw.Write.String() != "write" || fairrw.Mode(0).String() != "invalid" {
		t.Fatal("Mode.String")
	}
}

// TestWithURL: a URL becomes the rueidis client's options; one that does not
// parse is refused before anything is sent, without its password.
func TestWithURL(t *testing.T) {
	for _, bad := range []string{"http://h:6379", "redis://user:s3cret@h:6379/notadb", "redis://user:s3cret@[::1"} {
		_, err := fairrw.New(fairrw.WithURL(bad))
		if !errors.Is(err, fairrw.ErrInvalidOption) {
			t.Fatalf("New(WithURL(%q)) = %v, want ErrInvalidOption", bad, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("the error shows the password: %v", err)
		}
	}
}
