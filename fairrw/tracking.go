package fairrw

import (
	"errors"
	"strings"

	"github.com/redis/rueidis"
)

// Client tracking, and a Client whose ACL user may not use it.
//
// A tenant on a shared Redis should not be given CLIENT TRACKING where the
// server leaks other users' key names through it (docs/acl.md, "Client
// tracking"). Such a Client connects without tracking rather than fail:
// waiters then wake by pub/sub (and their timer), as on a rueidis client
// with DisableCache, and reads do not share a hold (readshare.go).

// refusesTracking reports whether err, from connecting with opt, is the ACL
// user refusing CLIENT TRACKING, which rueidis sends on every connection
// unless DisableCache. rueidis reports it as a server without client-side
// caching (ErrNoCache), quoting the refusal and the command.
func refusesTracking(err error, opt rueidis.ClientOption) bool {
	return err != nil && !opt.DisableCache && errors.Is(err, rueidis.ErrNoCache) &&
		refusedByACL(err) && strings.Contains(err.Error(), "[CLIENT TRACKING")
}

// withoutTracking is opt for a connection without client tracking.
func withoutTracking(opt rueidis.ClientOption) rueidis.ClientOption {
	opt.DisableCache = true
	opt.OnInvalidations = nil
	return opt
}
