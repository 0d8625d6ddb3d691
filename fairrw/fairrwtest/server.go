package fairrwtest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
)

// A Server is a Redis for a test: in-process (NewServer, Start) or a
// redis-server process (NewRedisServer, StartRedisServer). Every Client
// made on it shares its data, as processes sharing one Redis do.
//
// A Server is safe for concurrent use. Close it after the Clients on it
// (NewServer and NewClient order their cleanups so); a Client whose server
// is gone fails its calls, and its held leases end.
type Server struct {
	addr   string
	mini   *miniredis.Miniredis // in-process; nil for a redis-server
	proc   *process             // redis-server; nil in-process
	option rueidis.ClientOption

	mu     sync.Mutex
	closed bool
}

// NewServer starts an in-process Redis (miniredis) that is closed when the
// test and its subtests end, after the Clients made on it later. See the
// package documentation for what it does not model.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	closeAtCleanup(tb, s)
	return s
}

// Start starts an in-process Redis (miniredis) on a free loopback port, for
// code that has no testing.TB (an Example, a TestMain); the caller must
// Close it. Its TTLs run in real time (ClockTTL), as Redis's do.
func Start() (*Server, error) {
	m := miniredis.NewMiniRedis()
	// Without it miniredis's TTLs stand still unless FastForward is
	// called, and a lease would never run out.
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("fairrwtest: start miniredis: %w", err)
	}
	return &Server{
		addr: m.Addr(),
		mini: m,
		option: rueidis.ClientOption{
			InitAddress: []string{m.Addr()},
			// miniredis has no CLIENT TRACKING: rueidis's defaults fail to
			// connect to it.
			DisableCache: true,
			AlwaysRESP2:  true,
			// miniredis answers CLUSTER SLOTS as a one-node cluster; it is a
			// single server, and rueidis's single client is what a service
			// on a standalone Redis runs.
			ForceSingleClient: true,
		},
	}, nil
}

// NewClient returns a fairrw Client on a new in-process Server of its own,
// closed when the test ends (the Client first). opts are as for
// Server.NewClient. Use NewServer and Server.NewClient for several Clients
// on one Redis.
func NewClient(tb testing.TB, opts ...fairrw.Option) *fairrw.Client {
	tb.Helper()
	return NewServer(tb).NewClient(tb, opts...)
}

// NewClient returns a fairrw Client on s, closed when the test ends (before
// s when s was made by NewServer or NewRedisServer first). Every call is a
// new Client: a new process as far as the lock is concerned. opts are any
// fairrw options but the connection, which is always s: a
// fairrw.WithClientOption among them is overridden, so that no test reaches
// another Redis by mistake, and fairrw.WithClient makes fairrw.New fail.
// An option fairrw.New refuses, or a closed s, fails the test with the
// reason.
func (s *Server) NewClient(tb testing.TB, opts ...fairrw.Option) *fairrw.Client {
	tb.Helper()
	if s.isClosed() {
		tb.Fatalf("fairrwtest: NewClient on %s: %v", s.addr, errServerClosed)
	}
	// Last, since the last connection option given to fairrw.New wins.
	all := append(slices.Clip(opts), fairrw.WithClientOption(s.ClientOption()))
	c, err := fairrw.New(all...)
	if err != nil {
		tb.Fatalf("fairrwtest: NewClient on %s: %v", s.addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// ClientOption returns the rueidis option that connects to s, for
// fairrw.WithClientOption or rueidis.NewClient; its InitAddress is the
// server's host:port on 127.0.0.1, for any other client. In-process it sets
// DisableCache, AlwaysRESP2 and ForceSingleClient (see the package
// documentation); for a redis-server only ForceSingleClient, so that fairrw
// uses RESP3 and client tracking as on a production Redis. Each call returns
// a copy the caller may change.
func (s *Server) ClientOption() rueidis.ClientOption {
	opt := s.option
	opt.InitAddress = append([]string(nil), s.option.InitAddress...)
	return opt
}

// Miniredis returns the in-process server, to look at its data (Dump,
// Keys) or to make it fail (SetError), or nil for a redis-server.
//
// Its clock is not a way to end leases. fairrw keeps a hold's deadline on
// the server's clock (TIME) inside the lock's keys, and refuses to act on a
// server whose clock runs ahead of the client's by more than its unlock
// timeout: FastForward moves TTLs but no deadline, so it frees only some
// locks, and SetTime that far ahead makes every acquire fail with
// fairrw.ErrClockSkew. Give the holder a short lease instead
// (fairrw.WithLeaseTime, fairrw.WithLease) and close its Client, or free
// the lock with ForceUnlock. Do not turn ClockTTL off either: a lease would
// then never run out.
func (s *Server) Miniredis() *miniredis.Miniredis { return s.mini }

// Close stops the server: miniredis is closed, a redis-server is killed and
// waited for, and its temporary directory removed. It is safe to call more
// than once; later calls return nil.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.mini != nil {
		s.mini.Close()
		return nil
	}
	return s.proc.stop()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// closeAtCleanup closes s when tb ends, reporting a server that would not
// stop.
func closeAtCleanup(tb testing.TB, s *Server) {
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
}
