package redistest

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

// TestStoppedServerKeepsItsPort: while a server is down (Kill, Stop), its
// port stays held, so that no other process takes it before the server
// starts again on it (with two suites on one machine, one did: "Address
// already in use" at a Sentinel test's restart). A client is refused
// meanwhile, as by any server that is down; once started again the server
// answers, and the hold is gone.
func TestStoppedServerKeepsItsPort(t *testing.T) {
	needRedisServer(t)
	r := StartProcess(t)
	_, p, err := net.SplitHostPort(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, down := range []struct {
		name string
		do   func(testing.TB)
	}{{"Kill", r.Kill}, {"Stop", r.Stop}} {
		down.do(t)
		if err := bindPlain(port); !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("after %s: a bind of port %d without SO_REUSEADDR: %v, want EADDRINUSE (the port held)", down.name, port, err)
		}
		if c, err := net.DialTimeout("tcp", r.Addr, time.Second); err == nil {
			c.Close()
			t.Fatalf("after %s: a connection to %s was accepted", down.name, r.Addr)
		}
		r.Restart(t)
		if _, err := redisnet.Command(r.Addr, 5*time.Second, "PING"); err != nil {
			t.Fatalf("after %s and Restart: PING: %v", down.name, err)
		}
		r.mu.Lock()
		held := r.unhold != nil
		r.mu.Unlock()
		if held {
			t.Fatalf("after %s and Restart: the port is still held", down.name)
		}
	}
}

// bindPlain binds a socket to 127.0.0.1:port without SO_REUSEADDR, and
// closes it.
func bindPlain(port int) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
}
