package fairrw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/hidden"
)

// Defaults of the Client options.
const (
	// defaultLeaseTime is the watchdog lease, as Redisson's lockWatchdogTimeout.
	defaultLeaseTime = hidden.LeaseTime
	// defaultUnlockTimeout is the default of WithUnlockTimeout.
	defaultUnlockTimeout = hidden.UnlockTimeout
)

// An Option configures a Client. Options are validated by New.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// publishCommand is how release scripts publish on the lock's channel.
type publishCommand string

const (
	// publishAuto publishes as Java Redisson would: SPUBLISH on a Redis 7+
	// cluster, PUBLISH otherwise.
	publishAuto publishCommand = ""
	// publishClassic always uses PUBLISH and SUBSCRIBE.
	publishClassic publishCommand = "publish"
	// publishSharded always uses SPUBLISH and SSUBSCRIBE (Redis 7+).
	publishSharded publishCommand = "spublish"
)

type config struct {
	client         rueidis.Client
	clientOption   *rueidis.ClientOption
	policy         Policy
	leaseTime      time.Duration
	unlockTimeout  time.Duration
	connectTimeout time.Duration
	publish        publishCommand
	tracking       bool
	tracer         trace.TracerProvider // nil: the global one
	meter          metric.MeterProvider // nil: the global one
	logger         *slog.Logger         // nil: silent
	syncReplicas   int
	syncTimeout    time.Duration
	protocol       int                                 // 0: wire.Protocol (withProtocol)
	namespace      string                              // WithNamespace; "" for none
	cohorts        bool                                // WithCohorts
	deployment     string                              // WithDeployment; "": the Redis addresses
	show           func(string) string                 // WithRedactedNames; nil: names as they are
	wrap           func(rueidis.Client) rueidis.Client // WithRedisWrapper
	noRoundTrips   bool                                // WithRedisSpans(false)
	slowAnswer     time.Duration                       // withSlowAnswer; 0: slowAnswer
	cleanupGrace   time.Duration                       // withCleanupGrace; 0: cleanupGrace
}

func defaultConfig() config {
	return config{
		policy:         WriterPreferring(),
		leaseTime:      defaultLeaseTime,
		unlockTimeout:  defaultUnlockTimeout,
		connectTimeout: defaultConnectTimeout,
		tracking:       true,
		cohorts:        true,
	}
}

// WithCohorts turns lock cohorting on (the default) or off. On, the Lock
// calls of one Client on one name under WriterPreferring or PhaseFair take
// one place in the lock's queue, and a holder's Unlock passes the write to
// the next of them without a Redis call while the policy lets it: a run of
// passes ends as soon as the Client knows, or cannot rule out, that someone
// the policy serves next waits (client tracking tells it, one push after
// they queued in Redis). Under PhaseFair a waiting reader ends the run at
// once; a writer outside the cohort (another Client's, or a WithLease Lock)
// gets the write after at most 2 more holds passed; a run nobody else waits
// for goes on for 63 passes. Then the next Lock of the cohort is queued in
// Redis and the write goes back there, which grants it to the writer queued
// first. So a writer of another Client waits, once its Client heard of it,
// for at most 3 holds of each Client's cohort ahead of it (at most 3 of its
// hold times, plus a handoff: see docs/policies.md), and a PhaseFair reader
// for the write it found. Every Lease keeps its own Done, Context, Unlock
// and a fencing token above every token Redis granted before; a hold that
// Redis lost before its deadline (ForceUnlock, a restart without
// persistence) may be passed until the next renewal, with a lower token
// that a fencing store refuses. Without client tracking (WithClient,
// DisableCache, RESP2) a Client never knows who waits: WriterPreferring
// passes at most 2 holds per grant in Redis, PhaseFair none.
// On, the plain reads (RLock, TryRLock) of one Client on one name also
// share one read hold in Redis while they overlap and no writer is known
// to wait: a read that comes while it is held gets a Lease on it with no
// Redis call, and only the last Unlock releases it in Redis. A writer
// queuing anywhere is known at once by client tracking, after which new
// reads go to Redis and wait as the policy says.
// Off, every grant goes through Redis in strict FIFO order across Clients,
// and every read is a hold of its own. TryLock, WithLease,
// WithSyncReplicas and the Redisson formats never use cohorts nor share.
func WithCohorts(on bool) Option {
	return optionFunc(func(cfg *config) error {
		cfg.cohorts = on
		return nil
	})
}

// WithClient makes the Client use an existing rueidis client, which the
// caller keeps and closes. Its waiters then wake without client tracking.
func WithClient(c rueidis.Client) Option {
	return optionFunc(func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("%w: WithClient(nil)", ErrInvalidOption)
		}
		cfg.client = c
		return nil
	})
}

// WithURL makes the Client build its own rueidis client from a Redis URL, as
// rueidis.ParseURL reads it. A rediss:// URL verifies the server's
// certificate against the system's roots (SSL_CERT_FILE and SSL_CERT_DIR
// add a private CA); its skip_verify, which would turn verification off,
// is refused (docs/acl.md, TLS). A URL that does not parse, or that sets
// skip_verify, returns an error wrapping ErrInvalidOption, which never
// includes the password.
func WithURL(url string) Option {
	return optionFunc(func(cfg *config) error {
		opt, err := rueidis.ParseURL(url)
		if err != nil {
			var uerr *neturl.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // its URL may carry a password
			}
			hint := ""
			if !strings.Contains(url, "://") {
				hint = " (a URL starts with its scheme: redis://host:port, rediss:// for TLS, unix:///path for a socket)"
			}
			return fmt.Errorf("%w: WithURL: %v%s", ErrInvalidOption, err, hint)
		}
		if err := checkURLTLS(opt); err != nil {
			return err
		}
		return WithClientOption(opt).apply(cfg)
	})
}

// checkURLTLS refuses a rediss:// URL whose skip_verify turns certificate
// verification off: a Client would then talk to whoever answers, and send
// it the password. A URL is often configuration that nobody reviews as code;
// a program that wants it anyway says so in code, with
// TLSConfig.InsecureSkipVerify in WithClientOption.
func checkURLTLS(opt rueidis.ClientOption) error {
	if opt.TLSConfig != nil && opt.TLSConfig.InsecureSkipVerify {
		return fmt.Errorf("%w: WithURL: skip_verify turns TLS certificate verification off, so anyone on the network path can pose as Redis and read the password: "+
			"trust the server's CA instead (SSL_CERT_FILE, or TLSConfig.RootCAs in WithClientOption); to turn verification off anyway, set TLSConfig.InsecureSkipVerify in WithClientOption", ErrInvalidOption)
	}
	return nil
}

// WithClientOption makes the Client build its own rueidis client from opt,
// and close it on Close. opt.OnInvalidations and opt.ClientTrackingOptions
// must be unset: fairrw sets them, unless opt.DisableCache or AlwaysRESP2 is.
// With client tracking on, the Client sends its calls to a node on one
// connection (it sets opt.PipelineMultiplex to -1), the one its
// invalidations come on, so that nothing it is answered runs ahead of what
// it is told changed; opt.PipelineMultiplex > 0 and DisableAutoPipelining
// need DisableCache.
// When Redis refuses the ACL user CLIENT TRACKING (a tenant of a shared
// Redis, docs/acl.md), the Client connects without it, as with
// DisableCache: its reads share no hold, and its waiters wake by pub/sub.
// An opt.TLSConfig with InsecureSkipVerify is obeyed, with a warning in the
// Client's log.
func WithClientOption(opt rueidis.ClientOption) Option {
	return optionFunc(func(cfg *config) error {
		if len(opt.InitAddress) == 0 {
			return fmt.Errorf("%w: WithClientOption needs InitAddress", ErrInvalidOption)
		}
		if opt.OnInvalidations != nil || opt.ClientTrackingOptions != nil {
			return fmt.Errorf("%w: WithClientOption: OnInvalidations and ClientTrackingOptions are set by fairrw", ErrInvalidOption)
		}
		if err := checkAddresses(opt); err != nil {
			return err
		}
		cfg.clientOption = &opt // the last of WithClientOption and WithURL counts
		return nil
	})
}

// checkAddresses refuses what no dial can reach: an address without a
// port, a port out of range, a negative DB index. A caller's dialer
// (DialFn, DialCtxFn: a unix socket, say) reads the addresses its own way.
func checkAddresses(opt rueidis.ClientOption) error {
	if opt.SelectDB < 0 {
		return fmt.Errorf("%w: DB index %d is negative (Redis numbers its databases from 0)", ErrInvalidOption, opt.SelectDB)
	}
	if opt.DialFn != nil || opt.DialCtxFn != nil {
		return nil
	}
	for _, addr := range opt.InitAddress {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("%w: address %q: %v (want host:port, as in localhost:6379)", ErrInvalidOption, addr, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			if _, lerr := net.LookupPort("tcp", port); lerr != nil {
				return fmt.Errorf("%w: address %q: port %q is not a number (want host:port, as in localhost:6379)", ErrInvalidOption, addr, port)
			}
			continue
		}
		if n < 1 || n > 65535 {
			return fmt.Errorf("%w: address %q: port %d is out of range (1 to 65535)", ErrInvalidOption, addr, n)
		}
	}
	return nil
}

// WithTracerProvider makes the Client trace acquires, Unlocks, watchdog rounds
// and lost leases with tp. The default is the global provider at New.
// While tp is a no-op (go.opentelemetry.io/otel/trace/noop's, or the global
// provider before an SDK is installed in it), Lock and Unlock start no span:
// it would record nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(cfg *config) error {
		if tp == nil {
			return fmt.Errorf("%w: WithTracerProvider(nil)", ErrInvalidOption)
		}
		cfg.tracer = tp
		return nil
	})
}

// WithMeterProvider makes the Client record its metrics with mp. The default
// is the global provider. Recording allocates nothing.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(cfg *config) error {
		if mp == nil {
			return fmt.Errorf("%w: WithMeterProvider(nil)", ErrInvalidOption)
		}
		cfg.meter = mp
		return nil
	})
}

// WithLogger makes the Client log to l: failures (Warn), lost leases
// (Error; Info when Close ended them), a Redis outage (one Warn when it
// begins, one Info when it ends), ForceUnlock (Warn) and Shutdown (one
// Info line). Records of a call are logged with its ctx, so a handler may
// take the trace from it. Durations are in seconds. The default is silent.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(cfg *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		cfg.logger = l
		return nil
	})
}

// WithDeployment names the Redis deployment the Client uses, for telemetry:
// every metric and span carries it as fairrw.deployment, so that two
// Clients of one process on two deployments (two regions, two clusters)
// are told apart. The default is the Redis addresses, as given to
// WithClientOption or WithURL (comma-separated), or the nodes of a
// WithClient client. An empty name is ErrInvalidOption.
func WithDeployment(name string) Option {
	return optionFunc(func(cfg *config) error {
		if name == "" {
			return fmt.Errorf("%w: WithDeployment(\"\")", ErrInvalidOption)
		}
		cfg.deployment = name
		return nil
	})
}

// WithRedactedNames makes telemetry show every lock name as show(name):
// the fairrw.lock.name attribute of spans, the lock attribute of log
// records, and the name quoted in the error texts that spans and logs
// carry. A name shown as "" is left out: no attribute, no lock in the log
// record, and <lock> in error texts. Use it where names carry personal
// data (orders:<customer>): OmitNames drops them, HashNames replaces them
// with a keyed hash that still tells one lock from another. Metrics never
// carry lock names, and errors returned to the caller name the lock as it
// is. The default shows names as they are; a nil show is ErrInvalidOption.
func WithRedactedNames(show func(name string) string) Option {
	return optionFunc(func(cfg *config) error {
		if show == nil {
			return fmt.Errorf("%w: WithRedactedNames(nil)", ErrInvalidOption)
		}
		cfg.show = show
		return nil
	})
}

// OmitNames is a WithRedactedNames function that shows no lock name.
func OmitNames(string) string { return "" }

// HashNames returns a WithRedactedNames function that shows each lock name
// as "h:" and the first 16 hex digits of its HMAC-SHA256 under key: the
// same name always shows the same, and without key nobody can tell which
// name it is by hashing guesses. An empty key still hashes, but a guessable
// name (orders:42) is then found by hashing guesses.
func HashNames(key []byte) func(name string) string {
	key = bytes.Clone(key)
	return func(name string) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(name))
		return "h:" + hex.EncodeToString(mac.Sum(nil)[:8])
	}
}

// WithRedisWrapper makes the Client use wrap(rdb) instead of the rueidis
// client rdb it builds (WithClientOption, WithURL): a place for the
// caller's rueidis instrumentation (a tracing or metrics wrapper), whose
// command spans then nest under fairrw's spans, since every call passes
// its ctx down. The Client still builds rdb with its invalidation hook, so
// that wake-ups by client tracking and shared reads (WithCohorts) keep
// working, as they do not with WithClient: the wrapper must pass every
// call on to the client it wraps (DoMulti, DoCache and Dedicate included:
// waiters subscribe on a dedicated connection, whose Receive the wrapper
// sees only if it wraps the DedicatedClient too) and its Close must close
// it. wrap is called once per rueidis client,
// when it connects. A nil wrap, or one given with WithClient (wrap your
// own client instead), is ErrInvalidOption.
func WithRedisWrapper(wrap func(rdb rueidis.Client) rueidis.Client) Option {
	return optionFunc(func(cfg *config) error {
		if wrap == nil {
			return fmt.Errorf("%w: WithRedisWrapper(nil)", ErrInvalidOption)
		}
		cfg.wrap = wrap
		return nil
	})
}

// WithRedisSpans turns on or off the spans of Redis round trips: each
// script call fairrw makes for a traced acquire, Unlock, ForceUnlock or
// Inspect is a client span (EVALSHA, with the database attributes) under
// the call's span. Off, those calls have their own span only, half as many
// spans for a fully sampled lock+unlock: for a service whose rueidis
// instrumentation (WithRedisWrapper) traces every command already, or that
// samples every trace. Renewal rounds are one round trip, and keep their
// span. The default is on.
func WithRedisSpans(on bool) Option {
	return optionFunc(func(cfg *config) error {
		cfg.noRoundTrips = !on
		return nil
	})
}

// WithSyncReplicas makes every grant wait for n replicas to acknowledge it
// (WAIT). When fewer did within timeout, the grant is given back and the
// acquire fails with ErrNotReplicated. Off by default. It narrows the window
// in which a failover loses a grant; fencing tokens remain the guarantee.
func WithSyncReplicas(n int, timeout time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if n < 1 || timeout <= 0 {
			return fmt.Errorf("%w: WithSyncReplicas(%d, %v): want at least 1 replica and a positive timeout", ErrInvalidOption, n, timeout)
		}
		cfg.syncReplicas, cfg.syncTimeout = n, timeout
		return nil
	})
}

// WithPolicy chooses the lock's admission policy. The default is
// WriterPreferring(); use Redisson() to share locks with Java Redisson.
func WithPolicy(p Policy) Option {
	return optionFunc(func(cfg *config) error {
		if p == nil {
			return fmt.Errorf("%w: WithPolicy(nil)", ErrInvalidOption)
		}
		cfg.policy = p
		return nil
	})
}

// WithLeaseTime sets the watchdog lease: a lock taken without WithLease is
// held for d and renewed every d/3. The default is 30s, as Redisson's
// lockWatchdogTimeout. d is at least 3ms and at most a year, else New fails
// with ErrInvalidOption.
func WithLeaseTime(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d < 3*time.Millisecond {
			return fmt.Errorf("%w: lease time %v must be at least 3ms", ErrInvalidOption, d)
		}
		if d > maxSpan {
			return fmt.Errorf("%w: lease time %v is over a year", ErrInvalidOption, d)
		}
		cfg.leaseTime = d
		return nil
	})
}

// WithUnlockTimeout bounds each try of a release or a give-back that has no
// deadline of its own. Redis remembers an unlock's answer and an acquire's
// attempt for about twice d, so that a retry counts once. No call waits for it
// past its ctx. The default is 5s; d is positive and at most a year, else
// New fails with ErrInvalidOption.
func WithUnlockTimeout(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: unlock timeout %v must be positive", ErrInvalidOption, d)
		}
		if d > maxSpan {
			return fmt.Errorf("%w: unlock timeout %v is over a year", ErrInvalidOption, d)
		}
		cfg.unlockTimeout = d
		return nil
	})
}

// WithConnectTimeout bounds how long a call whose ctx has no deadline waits
// for Redis while the Client cannot reach it: no connection yet (Redis
// down, loading, busy, a stalled TLS handshake), or every try of an
// acquire failing for want of Redis. The call then fails with an error
// wrapping ErrUnavailable that names the address and the last error,
// rather than wait silently; a Lock waiting for a lock that is held waits
// on. A call with a deadline waits until its deadline. The default is 5s,
// the dial timeout of rueidis and go-redis; d is positive and at most a
// year, else New fails with ErrInvalidOption.
func WithConnectTimeout(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: connect timeout %v must be positive", ErrInvalidOption, d)
		}
		if d > maxSpan {
			return fmt.Errorf("%w: connect timeout %v is over a year", ErrInvalidOption, d)
		}
		cfg.connectTimeout = d
		return nil
	})
}

// withPublishCommand overrides how releases publish and waiters subscribe.
// The default, publishAuto, does as Java Redisson does.
func withPublishCommand(p publishCommand) Option {
	return optionFunc(func(cfg *config) error {
		switch p {
		case publishAuto, publishClassic, publishSharded:
			cfg.publish = p
			return nil
		}
		return fmt.Errorf("%w: unknown publish command %q", ErrInvalidOption, string(p))
	})
}

// withClientTracking turns the client-tracking wake-up path of WithClientOption
// on or off. It is on where the connection supports it.
func withClientTracking(on bool) Option {
	return optionFunc(func(cfg *config) error {
		cfg.tracking = on
		return nil
	})
}

// withCleanupGrace sets how long a call whose ctx has ended still waits
// for the clean-up it leaves (cleanupGrace by default). The library's own
// tests raise it where a loaded machine keeps every answer past the
// default: what they check is that the call waits for the clean-up and
// returns once it is confirmed, which holds for any grace.
func withCleanupGrace(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: clean-up grace %v is not positive", ErrInvalidOption, d)
		}
		cfg.cleanupGrace = d
		return nil
	})
}

// withSlowAnswer sets how long a Redis call must go unanswered, when its
// ctx ends, to count as Redis unreachable rather than an ordinary round
// trip (slowAnswer by default). The library's own tests on miniredis raise
// it: on a loaded machine an in-process server can be kept from answering
// for 100 ms, which the Client rightly reports as an outage, while what
// those tests check is how a lock wait, a deploy or a loss is reported.
func withSlowAnswer(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: slow-answer threshold %v is not positive", ErrInvalidOption, d)
		}
		cfg.slowAnswer = d
		return nil
	})
}

// An AcquireOption configures one Lock, RLock, TryLock or TryRLock call.
type AcquireOption interface {
	applyAcquire(*acquireConfig) error
}

type acquireOptionFunc func(*acquireConfig) error

func (f acquireOptionFunc) applyAcquire(c *acquireConfig) error { return f(c) }

type acquireConfig struct {
	lease    time.Duration // 0: the client's watchdog lease, renewed
	explicit bool
	// unreachableFails is not an option: a quorum's node attempt gives up
	// at once when it cannot connect, rather than retry until its round's
	// timeout (the round counts the node as refusing).
	unreachableFails bool
	// notify is not an option either: a quorum Lock's node attempt, refused,
	// asks to be told when the way is clear (a fair policy's "r"), as a
	// queued waiter would be; a plain TryLock changes nothing when refused.
	notify bool
	// cohort is the cohort a Lock acquires for, as its leader or by a
	// pass (cohort.go): its Lease is then the cohort's hold.
	cohort *cohort
	// share is the name's shared read hold a plain read may share, or
	// that its grant becomes (readshare.go).
	share *readShare
}

// failUnreachable is the quorum rounds' internal acquire option (see
// acquireConfig.unreachableFails).
var failUnreachable AcquireOption = acquireOptionFunc(func(c *acquireConfig) error {
	c.unreachableFails = true
	return nil
})

// notifyWhenFree is the quorum Lock's internal acquire option (see
// acquireConfig.notify).
var notifyWhenFree AcquireOption = acquireOptionFunc(func(c *acquireConfig) error {
	c.notify = true
	return nil
})

// maxSpan is the longest lease, lease time or unlock timeout accepted (a
// year): a deadline is the time now plus the span and a margin, in
// nanoseconds, which a span near time.Duration's 292 years would overflow
// into the past.
const maxSpan = 365 * 24 * time.Hour

// WithLease holds the lock for exactly d, without renewal: Done closes with
// ErrLeaseLost once d has passed, unless the lease was unlocked before. d
// is at least 1ms and at most a year, else ErrInvalidOption.
func WithLease(d time.Duration) AcquireOption {
	return acquireOptionFunc(func(c *acquireConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: lease %v must be positive", ErrInvalidOption, d)
		}
		if d < time.Millisecond {
			return fmt.Errorf("%w: lease %v is under Redis's 1ms resolution", ErrInvalidOption, d)
		}
		if d > maxSpan {
			return fmt.Errorf("%w: lease %v is over a year", ErrInvalidOption, d)
		}
		c.lease = d
		c.explicit = true
		return nil
	})
}

// withProtocol makes a fair policy speak protocol v of wire.Protocol's
// history: only tests use it (hidden.WithProtocol), to check that two
// protocols never share a lock. It applies to the policy chosen by the
// options, whatever their order.
func withProtocol(v int) Option {
	return optionFunc(func(cfg *config) error {
		if v < 1 {
			return fmt.Errorf("%w: protocol %d", ErrInvalidOption, v)
		}
		cfg.protocol = v
		return nil
	})
}

// policyImpl is the chosen policy's implementation, speaking cfg.protocol.
func (cfg *config) policyImpl() policyImpl {
	impl := cfg.policy.impl()
	if fp, ok := impl.(fairPolicy); ok && cfg.protocol != 0 {
		return newFairPolicy(fp.label, cfg.protocol)
	}
	return impl
}

// defaultConnectTimeout is how long a call whose ctx has no deadline waits
// for a connection that the Client cannot make (WithConnectTimeout): the
// dial timeout of rueidis, go-redis and redis-py.
const defaultConnectTimeout = 5 * time.Second
