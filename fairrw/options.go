package fairrw

import (
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redis/rueidis"
)

// Defaults of the Client options.
const (
	// DefaultLeaseTime is the watchdog lease, as Redisson's lockWatchdogTimeout.
	DefaultLeaseTime = 30 * time.Second
	// DefaultUnlockTimeout is the default of WithUnlockTimeout.
	DefaultUnlockTimeout = 5 * time.Second
)

// An Option configures a Client. Options are validated by New.
type Option interface {
	apply(*config) error
}

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// PublishCommand is how release scripts publish on the lock's channel.
type PublishCommand string

const (
	// PublishAuto publishes as Java Redisson would: SPUBLISH on a Redis 7+
	// cluster, PUBLISH otherwise.
	PublishAuto PublishCommand = ""
	// PublishClassic always uses PUBLISH and SUBSCRIBE.
	PublishClassic PublishCommand = "publish"
	// PublishSharded always uses SPUBLISH and SSUBSCRIBE (Redis 7+).
	PublishSharded PublishCommand = "spublish"
)

type config struct {
	client        rueidis.Client
	clientOption  *rueidis.ClientOption
	policy        Policy
	leaseTime     time.Duration
	unlockTimeout time.Duration
	publish       PublishCommand
	tracking      bool
	tracer        trace.TracerProvider // nil: the global one
	meter         metric.MeterProvider // nil: the global one
	logger        *slog.Logger         // nil: silent
	syncReplicas  int
	syncTimeout   time.Duration
}

func defaultConfig() config {
	return config{
		policy:        WriterPreferring(),
		leaseTime:     DefaultLeaseTime,
		unlockTimeout: DefaultUnlockTimeout,
		tracking:      true,
	}
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
// rueidis.ParseURL reads it. A URL that does not parse returns an error
// wrapping ErrInvalidOption, which never includes the password.
func WithURL(url string) Option {
	return optionFunc(func(cfg *config) error {
		opt, err := rueidis.ParseURL(url)
		if err != nil {
			var uerr *neturl.Error
			if errors.As(err, &uerr) {
				err = uerr.Err // its URL may carry a password
			}
			return fmt.Errorf("%w: WithURL: %v", ErrInvalidOption, err)
		}
		return WithClientOption(opt).apply(cfg)
	})
}

// WithClientOption makes the Client build its own rueidis client from opt,
// and close it on Close. opt.OnInvalidations and opt.ClientTrackingOptions
// must be unset: fairrw sets them, unless opt.DisableCache or AlwaysRESP2 is.
func WithClientOption(opt rueidis.ClientOption) Option {
	return optionFunc(func(cfg *config) error {
		if len(opt.InitAddress) == 0 {
			return fmt.Errorf("%w: WithClientOption needs InitAddress", ErrInvalidOption)
		}
		if opt.OnInvalidations != nil || opt.ClientTrackingOptions != nil {
			return fmt.Errorf("%w: WithClientOption: OnInvalidations and ClientTrackingOptions are set by fairrw", ErrInvalidOption)
		}
		cfg.clientOption = &opt // the last of WithClientOption and WithURL counts
		return nil
	})
}

// WithTracerProvider makes the Client trace acquires, Unlocks, watchdog rounds
// and lost leases with tp. The default is the global provider at New.
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

// WithLogger makes the Client log failures (Warn) and lost leases (Error;
// Info when Close ended them) to l. The default is silent.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(cfg *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger(nil)", ErrInvalidOption)
		}
		cfg.logger = l
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
// held for d and renewed every d/3. The default is DefaultLeaseTime.
func WithLeaseTime(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d < 3*time.Millisecond {
			return fmt.Errorf("%w: lease time %v must be at least 3ms", ErrInvalidOption, d)
		}
		cfg.leaseTime = d
		return nil
	})
}

// WithUnlockTimeout bounds each try of a release or a give-back that has no
// deadline of its own. Redis remembers an unlock's answer and an acquire's
// attempt for about twice d, so that a retry counts once. No call waits for it
// past its ctx. The default is DefaultUnlockTimeout.
func WithUnlockTimeout(d time.Duration) Option {
	return optionFunc(func(cfg *config) error {
		if d <= 0 {
			return fmt.Errorf("%w: unlock timeout %v must be positive", ErrInvalidOption, d)
		}
		cfg.unlockTimeout = d
		return nil
	})
}

// WithPublishCommand overrides how releases publish and waiters subscribe.
// The default, PublishAuto, does as Java Redisson does.
func WithPublishCommand(p PublishCommand) Option {
	return optionFunc(func(cfg *config) error {
		switch p {
		case PublishAuto, PublishClassic, PublishSharded:
			cfg.publish = p
			return nil
		}
		return fmt.Errorf("%w: unknown publish command %q", ErrInvalidOption, string(p))
	})
}

// WithClientTracking turns the client-tracking wake-up path of WithClientOption
// on or off. It is on where the connection supports it.
func WithClientTracking(on bool) Option {
	return optionFunc(func(cfg *config) error {
		cfg.tracking = on
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

// WithLease holds the lock for exactly d, without renewal: Done closes with
// ErrLeaseLost once d has passed, unless the lease was unlocked before.
func WithLease(d time.Duration) AcquireOption {
	return acquireOptionFunc(func(c *acquireConfig) error {
		if d <= 0 {
			return fmt.Errorf("%w: lease %v must be positive", ErrInvalidOption, d)
		}
		if d < time.Millisecond {
			return fmt.Errorf("%w: lease %v is under Redis's 1ms resolution", ErrInvalidOption, d)
		}
		c.lease = d
		c.explicit = true
		return nil
	})
}
