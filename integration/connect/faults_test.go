package connect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/lateness"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// TestShutdownWhileBackgroundDialStuck: Redis frozen (TCP accepts, no
// answer) at New, so the first connection is made in the background, and
// its dial blocks for the dial timeout. Shutdown with a 100 ms ctx must
// return by its deadline "whatever Redis does"; Close "at once".
func TestShutdownWhileBackgroundDialStuck(t *testing.T) {
	for _, how := range []string{"shutdown", "close"} {
		t.Run(how, func(t *testing.T) {
			r := redistest.StartProcess(t)
			ctl := lateness.Start(t)
			r.Pause(t)
			defer r.Resume(t)
			opt := r.ClientOption()
			opt.DisableCache = true
			opt.Dialer.Timeout = 1500 * time.Millisecond
			opt.ConnWriteTimeout = 1500 * time.Millisecond
			start := time.Now()
			c, err := fairrw.New(fairrw.WithClientOption(opt))
			if err != nil {
				t.Fatalf("New with Redis frozen: %v (after %v)", err, time.Since(start))
			}
			t.Logf("New returned after %v", time.Since(start))
			time.Sleep(200 * time.Millisecond) // the background redial is in its dial
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start = time.Now()
			if how == "shutdown" {
				err = c.Shutdown(ctx)
			} else {
				err = c.Close()
			}
			took := time.Since(start)
			t.Logf("%s returned %v after %v", how, err, took)
			// Past 500 ms it waits for the background dial.
			ctl.Within(how+" of a never-connected Client (ctx 100 ms)", took, 500*time.Millisecond)
		})
	}
}

// TestWrongPasswordWhileDown: Redis (requirepass) down at New with a
// wrong password; once Redis is up, waiting cannot cure the error. Does a
// call fail at once, or wait its whole ctx (forever with Background)?
func TestWrongPasswordWhileDown(t *testing.T) {
	const pw = "faults-Wr0ngPassw0rd"
	r := redistest.StartProcess(t)
	opt := r.ClientOption()
	opt.DisableCache = true
	opt.Username, opt.Password = "faults-nobody", pw // no such user: WRONGPASS
	// Up: New fails at once, and does not leak the password.
	if c, err := fairrw.New(fairrw.WithClientOption(opt)); err == nil {
		c.Close()
		t.Fatal("New with a wrong password while Redis is up succeeded")
	} else if strings.Contains(err.Error(), pw) {
		t.Fatalf("error leaks the password: %v", err)
	} else {
		t.Logf("up: New: %v", err)
	}
	r.Stop(t)
	c, err := fairrw.New(fairrw.WithClientOption(opt))
	if err != nil {
		t.Fatalf("New while down: %v", err)
	}
	defer c.Close()
	r.Restart(t)
	time.Sleep(300 * time.Millisecond)
	ctl := lateness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.RWMutex("faults:pw").Lock(ctx)
	took := time.Since(start)
	t.Logf("Lock after Redis came up with a wrong password: %v after %v", err, took)
	if err != nil && strings.Contains(err.Error(), pw) {
		t.Errorf("error leaks the password: %v", err)
	}
	// Near its whole ctx (3 s), it waits for a connection that a wrong
	// password never makes.
	ctl.Within(fmt.Sprintf("Lock on a wrong password (%v, ErrUnavailable %v)", err, errors.Is(err, fairrw.ErrUnavailable)), took, 2*time.Second)
}

// TestRedissToPlain: WithURL rediss:// to a server without TLS.
func TestRedissToPlain(t *testing.T) {
	r := redistest.StartProcess(t)
	// A server without TLS never answers the handshake: it fails at the
	// dial timeout, for good, and says why.
	c, err := fairrw.New(fairrw.WithURL("rediss://" + r.Addr + "?dial_timeout=300ms"))
	if err != nil {
		if !strings.Contains(err.Error(), "TLS") {
			t.Fatalf("New: %v, want a hint at TLS", err)
		}
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.RWMutex("faults:tls").Lock(ctx)
	if err == nil || !strings.Contains(err.Error(), "TLS") || time.Since(start) > 2*time.Second {
		t.Fatalf("rediss:// to a plain server: Lock %v after %v, want a TLS error once the dial timed out", err, time.Since(start))
	}
}

// TestConnectRacesClose: Redis down at New; Close races Redis coming
// back (the background dial succeeding as Close begins). No panic, no
// leak (goleak in TestMain), calls after Close fail with ErrClosed.
func TestConnectRacesClose(t *testing.T) {
	r := redistest.StartProcess(t)
	r.Stop(t)
	var cs []*fairrw.Client
	for i := 0; i < 6; i++ {
		opt := r.ClientOption()
		if i%2 == 0 {
			opt.DisableCache = true
		}
		c, err := fairrw.New(fairrw.WithClientOption(opt))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	go r.Restart(t)
	done := make(chan struct{})
	for i, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			time.Sleep(time.Duration(i*40) * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if i%3 == 0 {
				_ = c.Shutdown(ctx)
			} else {
				_ = c.Close()
			}
			if err := c.Ping(ctx); !errors.Is(err, fairrw.ErrClosed) {
				t.Errorf("Ping after close: %v", err)
			}
		}()
	}
	for range cs {
		<-done
	}
	time.Sleep(2500 * time.Millisecond) // let Restart finish
}
