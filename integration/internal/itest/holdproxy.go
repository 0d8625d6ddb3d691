package itest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// holdProxy is a TCP proxy that, once armed, keeps the first client->server
// chunk matching a predicate from reaching Redis, resets the client's side
// of that connection (the client sees a broken connection and retries on a
// new one), and keeps the server side open so the held command can be
// delivered later: a copy of a command delayed in the network, as
// fairrw/client.go (retryWindow) says can happen ("a connection stalled in
// the kernel's buffers"). (faults.Proxy's Stall holds every connection, the
// retry's too.)
type HoldProxy struct {
	ln     net.Listener
	target string

	Mu      sync.Mutex
	match   func([]byte) bool
	Held    []byte
	heldSrv net.Conn
	heldCh  chan struct{}
	conns   []net.Conn
}

func StartHoldProxy(t *testing.T, target string) *HoldProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &HoldProxy{ln: ln, target: target, heldCh: make(chan struct{})}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *HoldProxy) Addr() string { return p.ln.Addr().String() }

// Target is the address of the Redis the proxy forwards to.
func (p *HoldProxy) Target() string { return p.target }

func (p *HoldProxy) Arm(match func([]byte) bool) {
	p.Mu.Lock()
	p.match = match
	p.Mu.Unlock()
}

func (p *HoldProxy) close() {
	p.ln.Close()
	p.Mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.Mu.Unlock()
}

func (p *HoldProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.Mu.Lock()
		p.conns = append(p.conns, c, s)
		p.Mu.Unlock()
		go func() { io.Copy(c, s); c.Close() }()
		go p.up(c, s)
	}
}

func (p *HoldProxy) up(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			p.Mu.Lock()
			if p.match != nil && p.match(chunk) {
				p.match = nil
				p.Held = chunk
				p.heldSrv = s
				close(p.heldCh)
				p.Mu.Unlock()
				// Reset the client side; keep the server side for later.
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				c.Close()
				return
			}
			p.Mu.Unlock()
			if _, err := s.Write(chunk); err != nil {
				return
			}
		}
		if err != nil {
			s.Close()
			return
		}
	}
}

// waitHeld waits until a chunk was held.
func (p *HoldProxy) WaitHeld(t *testing.T, d time.Duration) {
	select {
	case <-p.heldCh:
	case <-time.After(d):
		t.Fatalf("no command was held within %v", d)
	}
}

// deliver sends the held command to Redis now (its reply goes nowhere: the
// client side is gone; io.Copy from s to the dead client just fails).
func (p *HoldProxy) Deliver(t *testing.T) {
	p.Mu.Lock()
	s, b := p.heldSrv, p.Held
	p.Mu.Unlock()
	if s == nil {
		t.Fatal("nothing held")
	}
	// The downstream copier (s -> closed client) would consume the reply;
	// that is fine, Redis runs the command when it reads it.
	if _, err := s.Write(b); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
}

func ContainsAll(b []byte, subs ...string) bool {
	for _, s := range subs {
		if !bytes.Contains(b, []byte(s)) {
			return false
		}
	}
	return true
}
