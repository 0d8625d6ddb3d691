// Package faults injects network and server faults for the reliability
// tests: an in-process TCP proxy between clients and Redis that can stall,
// blackhole, reset or refuse connections and drop a reply after Redis ran
// the command; a primary+replica pair for failover; SCRIPT FLUSH.
//
// Like redistest, which it builds on, it is meant to be imported by tests
// only.
package faults

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// mode is what the proxy does with the bytes it reads, in both directions.
type mode int

const (
	pass      mode = iota // forward
	stall                 // hold until Heal
	blackhole             // discard; Heal resets the connections that lost bytes
)

const (
	// chunkSize is the most a pump reads at once: one chunk is all a stalled
	// pump holds in memory (see Stall).
	chunkSize = 32 << 10
	// dialTimeout bounds the dial to the target for each accepted client.
	dialTimeout = 5 * time.Second
)

// Proxy is an in-process TCP proxy between clients and one Redis.
//
// Each accepted client connection gets its own connection to the target and
// two pumps, one per direction, that read a chunk (what one Read returns, at
// most 32 KiB) and pass it on according to the current mode. Every pump
// checks the mode for every chunk, so Stall, Blackhole and Heal act on
// existing connections at once, not only on new ones.
//
// A Proxy is safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close: aborts dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu       sync.Mutex
	changed  *sync.Cond // on mu: the mode changed or a connection closed
	mode     mode
	refuse   bool
	closed   bool
	conns    map[*conn]struct{}
	drops    []string // armed reply drops, oldest first; "" matches any command
	delays   []delay  // armed command delays, oldest first
	accepted int
	dropped  int
}

// NewProxy starts a proxy to target (host:port) listening on 127.0.0.1:0.
// It passes traffic until told otherwise.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[*conn]struct{})}
	p.changed = sync.NewCond(&p.mu)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// StartProxy is NewProxy for a test: it fails the test when the proxy cannot
// listen and closes the proxy at cleanup.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := NewProxy(target)
	if err != nil {
		tb.Fatalf("faults: proxy to %s: %v", target, err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// Addr is the proxy's address (127.0.0.1:port) for clients.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Heal returns to passing traffic both ways. Bytes held by Stall are then
// delivered, in order, on the connections that still exist. Connections that
// lost bytes to Blackhole are reset (RST) here: their RESP streams are out of
// step (a command without its reply, or half a reply), so a client must not
// go on using them; connections that had nothing to send meanwhile stay.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = pass
	for c := range p.conns {
		if c.lost {
			c.closeLocked(true)
		}
	}
	p.changed.Broadcast()
}

// Stall freezes the network: connections stay open, and every byte in both
// directions (and every close) is held until Heal, as TCP would keep it
// across a partition that heals. Nothing piles up in the proxy: each pump
// holds at most one chunk and stops reading, so the rest waits in the
// kernel's socket buffers and, once those are full, the sender's writes
// block, as on a frozen network. New connections are accepted and stall too.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = stall
}

// Blackhole silently discards every byte in both directions (and hides
// closes) until Heal, like packets that never arrive: clients see no reply
// and no error, only their own timeouts. Connections stay open, but any
// connection that lost bytes is reset by Heal (see there); new connections
// made after Heal work. What Stall holds when Blackhole is called is lost
// too: those connections are reset by Heal even if Heal comes before their
// pumps wake up.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = blackhole
	for c := range p.conns {
		if c.held > 0 {
			c.lost = true
		}
	}
	p.changed.Broadcast()
}

// Reset closes every current connection abruptly: the client and Redis
// both see a TCP RST. New connections are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.closeLocked(true)
	}
}

// Refuse makes the proxy reset new connections as soon as it accepts them
// while on is true (the kernel completes the TCP handshake, so a client sees
// the failure on its first read or write, not at dial). Existing connections
// are not affected.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// DropNextReply loses the reply to the next command any client sends after
// this call: the first chunk a client sends (on any connection) arms its
// connection, the next chunk Redis sends back on that connection - produced
// after Redis ran the command - is discarded, and that connection is then
// reset. The client sees a connection error for a command that did run.
//
// Claiming on the client's command, not on whatever Redis sends next, keeps
// a reply already on its way when this is called from being the one lost.
// Any client traffic counts as a command, though: rueidis PINGs idle
// connections (every Dialer.KeepAlive, 1s by default) and opens further
// pipelines lazily (PipelineMultiplex), each starting with a HELLO. With
// rueidis prefer DropReplyMatching, or set Dialer.KeepAlive < 0 and
// PipelineMultiplex = -1.
//
// Each call drops one reply.
func (p *Proxy) DropNextReply() { p.DropReplyMatching("") }

// DropReplyMatching is DropNextReply for the first command chunk that
// contains substr (compared byte for byte, so case matters: rueidis sends
// command names in upper case, e.g. "EVALSHA"), so that a test can lose an
// acquire's reply and nothing before it. Matches are found across chunk
// boundaries. The proxy resets that connection after dropping the reply.
// Each call drops one reply; calls are matched in order.
func (p *Proxy) DropReplyMatching(substr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops = append(p.drops, substr)
}

// delay is an armed DelayMatching.
type delay struct {
	substr string
	d      time.Duration
}

// DelayMatching holds back the next client command chunk that contains
// substr: a copy of a command delayed in the network. The client's side of
// that connection is reset at once, so the client sees a broken connection
// and retries on another; the held chunk reaches Redis d later, on the
// connection it came by (Redis runs it then, and its reply goes nowhere), and
// that connection is closed after. Close delivers nothing still held. Each
// call delays one command; calls are matched in order.
func (p *Proxy) DelayMatching(substr string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delays = append(p.delays, delay{substr, d})
}

// Stats reports the connections proxied so far (refused ones not counted)
// and the replies dropped so far.
func (p *Proxy) Stats() (conns, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.dropped
}

// Close stops the listener, resets every connection and waits until all the
// proxy's goroutines have returned. Calling it again does nothing more.
func (p *Proxy) Close() error {
	p.mu.Lock()
	first := !p.closed
	p.closed = true
	for c := range p.conns {
		c.closeLocked(true)
	}
	p.mu.Unlock()
	var err error
	if first {
		p.cancel()
		err = p.ln.Close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Such as EMFILE: give the system a moment instead of spinning.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		client := nc.(*net.TCPConn)
		p.mu.Lock()
		ok := !p.refuse && !p.closed
		if ok {
			p.accepted++
			// Added while the accept loop still counts, so never after
			// Close's Wait has seen zero.
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if !ok {
			rst(client)
			continue
		}
		go p.serve(client)
	}
}

// rst closes c with an RST instead of a FIN.
func rst(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
