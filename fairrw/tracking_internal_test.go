package fairrw

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/rueidis"
)

// refusesTracking is true for the error rueidis gives when the ACL user
// may not run CLIENT TRACKING (as dial wraps it too), and false for any
// other refusal, a server without client tracking, or a connection made
// without tracking.
func TestRefusesTracking(t *testing.T) {
	// As rueidis reports a CLIENT command refused while connecting.
	refused := fmt.Errorf("%s: %v\n%w", "NOPERM this user has no permissions to run the 'client|tracking' command", []string{"CLIENT", "TRACKING", "ON", "OPTIN"}, rueidis.ErrNoCache)
	tracked := rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}
	for _, c := range []struct {
		what string
		err  error
		opt  rueidis.ClientOption
		want bool
	}{
		{"refused", refused, tracked, true},
		{"refused, as dial wraps it", tag("fairrw: connect to x: "+reason(permissionError(refused)), ErrPermission, refused), tracked, true},
		{"refused, with DisableCache", refused, withoutTracking(tracked), false},
		{"another CLIENT command refused", fmt.Errorf("%s: %v\n%w", "NOPERM this user has no permissions to run the 'client|no-touch' command", []string{"CLIENT", "NO-TOUCH", "ON"}, rueidis.ErrNoCache), tracked, false},
		{"a server without tracking", fmt.Errorf("%s: %v\n%w", "ERR unknown subcommand 'TRACKING'", []string{"CLIENT", "TRACKING", "ON", "OPTIN"}, rueidis.ErrNoCache), tracked, false},
		{"RESP2 only", rueidis.ErrNoCache, tracked, false},
		{"a wrong password", errors.New("WRONGPASS invalid username-password pair or user is disabled."), tracked, false},
		{"no error", nil, tracked, false},
	} {
		if got := refusesTracking(c.err, c.opt); got != c.want {
			t.Errorf("%s: refusesTracking(%v) = %v, want %v", c.what, c.err, got, c.want)
		}
	}
	if opt := withoutTracking(rueidis.ClientOption{OnInvalidations: func([]rueidis.RedisMessage) {}}); !opt.DisableCache || opt.OnInvalidations != nil {
		t.Errorf("withoutTracking: DisableCache %v, OnInvalidations set %v", opt.DisableCache, opt.OnInvalidations != nil)
	}
}
