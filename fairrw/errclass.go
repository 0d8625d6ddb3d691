package fairrw

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/redis/rueidis"
)

// The errors of a connection, and what waiting does about them: the one
// table of them (docs/operations.md, "Connecting" says the same).
//
// A Client's connection is connecting, up or down. Only a refusal that no
// retry can change is permanent: New returns it, or the calls that waited
// for the first connection do; everything else is retried with backoff,
// for as long as the Client lives, and a Client made during it works once
// Redis does. A call waiting meanwhile fails with ErrUnavailable at its
// ctx's deadline, or after the connect timeout (WithConnectTimeout) when
// its ctx has none.
//
//	error                                     class    the error wraps
//	LOADING (a restart with persistence)      retry    ErrUnavailable
//	BUSY (a long script or function)          retry    ErrUnavailable
//	MASTERDOWN, CLUSTERDOWN, TRYAGAIN,
//	  READONLY (a failover under way)         retry    ErrUnavailable
//	refused, reset, closed, timed out         retry    ErrUnavailable
//	TLS handshake unanswered, and no plain
//	  PING answered (a stalled endpoint)      retry    ErrUnavailable
//	host not found (DNS not ready yet)        retry    ErrUnavailable
//	anything else not below                   retry    ErrUnavailable
//	WRONGPASS, NOAUTH (credentials)           refused  ErrPermission
//	NOPERM on what the Client needs (an ACL)  refused  ErrPermission
//	  (NOPERM on CLIENT TRACKING: it connects without tracking, tracking.go)
//	TLS alert (a client certificate, say)     refused  ErrPermission
//	TLS certificate not verified              refused  the x509 error
//	rediss:// against a plain server          refused  ErrInvalidOption
//	redis:// against a TLS port               refused  ErrInvalidOption
//	a server without tracking or RESP3        refused  ErrInvalidOption
//	DB index out of range                     invalid  ErrInvalidOption
//	another error answered by Redis           refused  Redis's error
//
// An invalid option (a port out of range, a URL without a scheme, a
// negative DB index) fails New at once, before any dial.
type errClass uint8

const (
	// classRetry: waiting may cure it. The connection is tried again with
	// backoff; calls wait for it (ErrUnavailable).
	classRetry errClass = iota
	// classRefused: Redis, or the TLS on the path to it, refused what no
	// retry changes.
	classRefused
	// classInvalid: the configuration is wrong (ErrInvalidOption).
	classInvalid
)

// A redisReply is one error code Redis answers with, and what it means for
// a connection or a call.
type redisReply struct {
	code  string // the reply's first word, or its first words
	class errClass
	// outage: Redis is there, but cannot serve the lock service now (an
	// outage for telemetry, ErrUnavailable for a call).
	outage bool
	why    string // said in the docs and in hints
}

// redisReplies is the table of Redis's error replies that fairrw
// interprets, by code. A code not here, answered to a command fairrw
// needs, is a refusal.
var redisReplies = []redisReply{
	{"LOADING", classRetry, true, "Redis is loading its data set, as after a restart with persistence"},
	{"BUSY ", classRetry, true, "Redis is running a script or function past its busy-reply-threshold"},
	{"MASTERDOWN", classRetry, true, "the replica lost its primary"},
	{"CLUSTERDOWN", classRetry, true, "the cluster cannot serve the slot"},
	{"TRYAGAIN", classRetry, false, "a slot is being migrated"},
	{"READONLY", classRetry, false, "the node stopped being the primary, in a failover"},
	{"WRONGPASS", classRefused, false, "wrong user or password"},
	{"NOAUTH", classRefused, false, "the server wants a password"},
	{"NOPERM", classRefused, false, "the ACL user may not run a command the Client needs"},
	// rueidis drops the ERR of an error reply.
	{"DB index is out of range", classInvalid, false, "the server has fewer databases (its databases setting)"},
	{"invalid DB index", classInvalid, false, "the DB index is not valid"},
}

// replyOf returns the entry of redisReplies for err, an error Redis
// answered, or that rueidis quotes in a failed connection's error (it
// reports a refused connection command as text: see refusedByACL).
func replyOf(err error) (redisReply, bool) {
	if err == nil {
		return redisReply{}, false
	}
	var msg string
	if rerr, ok := redisErrOf(err); ok {
		msg = rerr.Error()
	} else if errors.Is(err, rueidis.ErrNoCache) {
		msg, _, _ = strings.Cut(err.Error(), "\n")
	} else {
		return redisReply{}, false
	}
	for _, r := range redisReplies {
		if strings.HasPrefix(msg, r.code) || (r.code == "BUSY " && msg == "BUSY") {
			return r, true
		}
	}
	return redisReply{}, false
}

// classifyConnect says what waiting does about err, a failure to connect
// (after the probes of dial have told a TLS mismatch: see tls.go).
func classifyConnect(err error) errClass {
	if r, ok := replyOf(err); ok {
		return r.class
	}
	var cert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	switch {
	case errors.Is(err, ErrInvalidOption):
		return classInvalid
	case errors.Is(err, ErrPermission), tlsRefused(err), errors.As(err, &cert), errors.As(err, &unknownCA), errors.As(err, &hostname):
		return classRefused
	case errors.As(err, &record):
		return classRefused // a server that answered, but not with TLS
	case errors.Is(err, rueidis.ErrNoCache):
		return classRefused // no tracking or RESP3: waiting does not add it
	}
	if _, ok := redisErrOf(err); ok {
		return classRefused // Redis answered, with nothing that passes
	}
	return classRetry
}

// transient reports whether Redis refused a command, before running it, for
// a reason that passes by itself (redisReplies' retry class), or redirected
// it: a slot being migrated (TRYAGAIN, or a redirection rueidis did not
// follow), a cluster or a replication link momentarily down, a server
// loading its data or busy in a script, or a node that stopped being the
// primary (READONLY: a script gets it at its first write, and ours do every
// write after their reads, so it changed nothing). rueidis retries most of
// these itself, but not when the user set DisableRetry; the attempt and
// request ids make our retry safe.
func transient(err *rueidis.RedisError) bool {
	if _, ok := err.IsMoved(); ok {
		return true
	}
	if _, ok := err.IsAsk(); ok {
		return true
	}
	r, ok := replyOf(err)
	return ok && r.class == classRetry
}

// redisOut reports whether Redis answered that it cannot serve now: still
// loading its data, busy in a script, a cluster without a majority of its
// slots, or a replica that lost its primary. Redis is there, the lock
// service is not.
func redisOut(err *rueidis.RedisError) bool {
	r, ok := replyOf(err)
	return ok && r.outage
}

// asUnavailable returns err, the failure of one Redis call, wrapping
// ErrUnavailable (errRedisTimeout when it timed out) when the call failed
// for want of a connection: refused, reset, closed, not resolved, timed out
// at the socket, or rueidis giving a connection up. Its message is err's;
// errors.As still finds what it wraps. Errors Redis answered are left as
// they are (rueidis.IsRedisErr reads them unwrapped), and so are the
// caller's ctx's.
func asUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if _, ok := redisErrOf(err); ok {
		return err
	}
	var op *net.OpError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return tag(err.Error(), errRedisTimeout, err)
	case errors.As(err, &op), errors.As(err, &dns), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, rueidis.ErrClosing), errors.Is(err, net.ErrClosed):
		return tag(err.Error(), ErrUnavailable, err)
	}
	return err
}

// unavailableReason is reason(err), saying which Redis was unavailable
// when err wraps ErrUnavailable without saying so itself.
func unavailableReason(addr string, err error) string {
	if errors.Is(err, ErrUnavailable) && !strings.Contains(err.Error(), "unavailable") && !strings.Contains(err.Error(), "did not answer") {
		return fmt.Sprintf("Redis at %s unavailable: %s", addr, reason(err))
	}
	return reason(err)
}

// tlsRefused reports whether err is a TLS alert from the server: it
// answered, and refused the handshake (most often the client's certificate,
// or its absence). Waiting does not cure it.
func tlsRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// definite reports whether err is an answer from Redis (the script ran, or
// was refused, as a whole) rather than a failure whose outcome is unknown
// or a refusal that passes (see transient), both of which are retried.
func definite(err error) bool {
	if errors.Is(err, ErrPolicyMismatch) || errors.Is(err, ErrPermission) {
		return true
	}
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && !transient(rerr)
}

// unsent reports whether err is a failure to connect: the command never
// left this process, so it changed nothing in Redis. (A command written to
// a connection that broke afterwards fails otherwise, and may have run.)
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
