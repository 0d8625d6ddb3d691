package fairrw

import (
	"errors"
	"strings"

	"github.com/redis/rueidis"
)

// refusalCodes are how Redis says it refused the user rather than the command:
// its error codes, and the words of a refusal raised inside a script (Redis
// 7.0 reports a refused PUBLISH from a script without the NOPERM code).
var refusalCodes = []string{"NOPERM", "WRONGPASS", "NOAUTH"}

var refusalWords = []string{"no permissions to", "can't publish to the channel", "executing the script can't", "ACL failure"}

// refusedByACL reports whether err is Redis refusing the Client's user:
// credentials (WRONGPASS, NOAUTH) or an ACL rule (NOPERM). rueidis reports
// a refused connection command (CLIENT TRACKING) as text, not as a
// *rueidis.RedisError, so the text is read either way.
func refusedByACL(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		msg = rerr.Error()
	}
	for _, code := range refusalCodes {
		if strings.HasPrefix(msg, code) || strings.Contains(msg, ": "+code+" ") || strings.Contains(msg, "\n"+code+" ") {
			return true
		}
	}
	for _, w := range refusalWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// permissionError turns Redis's refusal err into an error wrapping
// ErrPermission (and err, for errors.As), quoting the server's message:
// it says which command, key or channel was refused. Redis never echoes a
// password, and neither does this message.
func permissionError(err error) error {
	if errors.Is(err, ErrPermission) {
		return err
	}
	msg := err.Error()
	if rerr, ok := rueidis.IsRedisErr(err); ok {
		msg = rerr.Error()
	}
	// rueidis adds lines of its own to a refused connection command (that
	// client tracking is unsupported): the refusal is the first.
	msg, _, _ = strings.Cut(msg, "\n")
	return tag("fairrw: refused by Redis: "+strings.TrimPrefix(msg, "fairrw: ")+" (credentials, and the commands, keys and channels each policy needs: docs/acl.md)", ErrPermission, err)
}
