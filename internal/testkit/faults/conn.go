package faults

import (
	"bytes"
	"io"
	"net"
	"slices"
	"time"
)

// conn is one client connection and its connection to the target.
type conn struct {
	p              *Proxy
	client, server *net.TCPConn

	// Guarded by p.mu.
	closed    bool
	held      int    // pumps waiting in Stall with a chunk (or EOF) in hand
	lost      bool   // Blackhole discarded something: Heal resets it
	dropReply bool   // the next chunk from the server is dropped, then a reset
	tail      []byte // end of the previous client chunk, for matches across chunks
}

// serve connects client to the target and pumps both ways until both
// directions have ended or the connection is closed.
func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// The target is down: the client sees a reset, as from a dead server.
		rst(client)
		return
	}
	c := &conn{p: p, client: client, server: nc.(*net.TCPConn)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		rst(c.client)
		rst(c.server)
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		c.pump(c.server, c.client, true)
	}()
	c.pump(c.client, c.server, false)
	<-done

	p.mu.Lock()
	delete(p.conns, c)
	c.closeLocked(false)
	p.mu.Unlock()
}

// pump copies src to dst chunk by chunk through forward. An EOF goes through
// forward too (as a nil chunk), so that Stall holds and Blackhole hides a
// close like data; it becomes a half-close of dst, which lets a command
// that a client sent just before closing still run and be answered.
func (c *conn) pump(src, dst *net.TCPConn, toClient bool) {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 && !c.forward(buf[:n], dst, toClient) {
			return
		}
		if err == io.EOF {
			c.forward(nil, dst, toClient)
			return
		}
		if err != nil {
			// Reset by a peer or closed by the proxy: end both directions.
			c.abort()
			return
		}
	}
}

// forward waits while the proxy stalls, then delivers b to dst (b == nil:
// half-closes dst) unless it is to be discarded. It reports whether the pump
// should go on.
func (c *conn) forward(b []byte, dst *net.TCPConn, toClient bool) bool {
	p := c.p
	p.mu.Lock()
	for p.mode == stall && !c.closed {
		c.held++
		p.changed.Wait()
		c.held--
	}
	switch {
	case c.closed:
		p.mu.Unlock()
		return false
	case p.mode == blackhole:
		c.lost = true
		p.mu.Unlock()
		return true
	case b != nil && toClient && c.dropReply:
		// Redis has answered, so it ran the command: lose the answer and
		// reset, so that the client sees an error, not a desynced stream.
		p.dropped++
		c.closeLocked(true)
		p.mu.Unlock()
		return false
	case b != nil && !toClient && c.claimDelayLocked(b):
		p.mu.Unlock()
		return false
	case b != nil && !toClient:
		// Armed before the command reaches Redis, so its reply cannot
		// overtake the decision.
		c.claimDropLocked(b)
	}
	p.mu.Unlock()

	var err error
	if b == nil {
		err = dst.CloseWrite()
	} else {
		_, err = dst.Write(b)
	}
	if err != nil {
		c.abort()
		return false
	}
	return true
}

// claimDropLocked arms c to drop its next reply when the client chunk b
// (with the end of the previous one in front) matches the oldest armed drop
// that it can match.
func (c *conn) claimDropLocked(b []byte) {
	p := c.p
	if c.dropReply || len(p.drops) == 0 {
		c.tail = nil
		return
	}
	hay := append(c.tail, b...)
	longest := 0
	for i, m := range p.drops {
		if bytes.Contains(hay, []byte(m)) {
			p.drops = slices.Delete(p.drops, i, i+1)
			c.dropReply = true
			c.tail = nil
			return
		}
		longest = max(longest, len(m))
	}
	keep := min(max(longest-1, 0), len(hay))
	c.tail = append([]byte(nil), hay[len(hay)-keep:]...)
}

// claimDelayLocked holds b back if it matches the oldest armed delay that
// it can match (see Proxy.DelayMatching): the client side is reset, the
// connection counts as closed (so that nothing else touches the server side),
// and b is written to the server when the delay has passed.
func (c *conn) claimDelayLocked(b []byte) bool {
	p := c.p
	for i, dl := range p.delays {
		if !bytes.Contains(b, []byte(dl.substr)) {
			continue
		}
		p.delays = slices.Delete(p.delays, i, i+1)
		c.closed = true
		rst(c.client)
		p.changed.Broadcast()
		held := append([]byte(nil), b...)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer rst(c.server)
			select {
			case <-time.After(dl.d):
			case <-p.ctx.Done():
				return
			}
			if _, err := c.server.Write(held); err == nil {
				time.Sleep(100 * time.Millisecond) // let Redis read it before the close
			}
		}()
		return true
	}
	return false
}

// abort resets both sides.
func (c *conn) abort() {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.closeLocked(true)
}

// closeLocked closes both sides, with an RST when abrupt is set, and wakes
// the pumps waiting in Stall. Closing a closed conn does nothing.
func (c *conn) closeLocked(abrupt bool) {
	if c.closed {
		return
	}
	c.closed = true
	for _, s := range []*net.TCPConn{c.client, c.server} {
		if abrupt {
			rst(s)
		} else {
			_ = s.Close()
		}
	}
	c.p.changed.Broadcast()
}
