package script

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
)

// ExecReadOnly runs a script that only reads: EVALSHA_RO, then EVAL_RO on
// NOSCRIPT. Redis (7+) refuses any write such a call attempts, and a
// cluster client may send it to a replica. It is sent as retryable: a
// script that writes nothing is safe to run twice.
//
// Where the read-only commands are missing (Redis before 7), or refuse a
// read the script needs (miniredis rejects TIME in them), it runs the
// script with Exec instead: the script itself writes nothing, so only the
// server's enforcement is lost.
func (s *Script) ExecReadOnly(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	ro := func(eval bool) rueidis.RedisResult {
		var cmd rueidis.Completed
		if eval {
			cmd = c.B().EvalRo().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		} else {
			cmd = c.B().EvalshaRo().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		}
		return c.Do(ctx, cmd.ToRetryable().Pin())
	}
	res := ro(false)
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && err.IsNoScript() {
		res = ro(true)
	}
	if err, ok := rueidis.IsRedisErr(res.Error()); ok && readOnlyUnsupported(err) {
		res = s.Exec(ctx, c, keys, args)
	}
	return res
}

// readOnlyUnsupported reports whether err says the server cannot run a
// script read-only: it lacks EVALSHA_RO, or it counts a read the script
// needs (TIME) as a write.
func readOnlyUnsupported(err *rueidis.RedisError) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "not allowed in read-only scripts")
}
