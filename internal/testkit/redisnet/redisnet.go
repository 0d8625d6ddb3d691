// Package redisnet speaks to a Redis server over a plain TCP connection,
// without a client library (and so without its goroutines): to find a free
// port for a server about to start, to wait until it answers, and to send
// it a command such as SHUTDOWN. The test harness and fairbench share it.
package redisnet

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// Command sends one command in RESP and returns the first reply line without
// its CRLF. It uses a plain connection so that no client library goroutines
// are involved.
func Command(addr string, timeout time.Duration, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// Ping sends PING to addr and expects +PONG.
func Ping(addr string) error { return PingWithin(addr, 2*time.Second) }

// PingWithin is Ping with a timeout for the dial and for the reply.
func PingWithin(addr string, timeout time.Duration) error {
	reply, err := Command(addr, timeout, "PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// WaitPing polls addr with PING until it answers, timeout passes, or exited
// (may be nil) is closed.
func WaitPing(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		err := Ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer from %s within %v: %w", addr, timeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited before answering PING on %s", addr)
		case <-time.After(25 * time.Millisecond):
		}
	}
}
