package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
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

// command sends one command in RESP and returns the first reply line without
// its CRLF. It uses a plain connection so that no client library goroutines
// are involved.
func command(addr string, timeout time.Duration, args ...string) (string, error) {
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

// ping sends PING to addr and expects +PONG.
func ping(addr string) error { return pingWithin(addr, 2*time.Second) }

// pingWithin is ping with a timeout for the dial and for the reply.
func pingWithin(addr string, timeout time.Duration) error {
	reply, err := command(addr, timeout, "PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// waitPing polls addr with PING until it answers, timeout passes, or exited
// (may be nil) is closed.
func waitPing(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(addr)
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

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
