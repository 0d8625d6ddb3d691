// Package redisnet speaks to a Redis server over a plain TCP connection,
// without a client library (and so without its goroutines): to find a free
// port for a server about to start, to wait until it answers, and to send
// it a command such as SHUTDOWN. The test harness and fairbench share it.
package redisnet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago,
// and that no server of this harness gave up within the last
// RetiredFor (see Retire), on this machine, whatever process ran it.
func FreePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, err
		}
		if !retired(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redisnet: 50 free ports in a row were retired within %v", RetiredFor)
}

// RetiredFor is how long a port that a server gave up is not handed out
// again: longer than anything a finished test leaves behind sends to its
// server's address (a Client closed with a release still retrying in the
// background, for up to its retry window, reconnects and retries on
// whatever listens there). With two suites on one machine, a port picked
// from the kernel's free ones was once a just-killed server's, and a
// release of the test before wrote its unlock latch into the next test's
// fresh server.
const RetiredFor = time.Minute

// retiredDir holds one empty file per retired port, named for it: its
// modification time is when it was retired. Shared by every process of
// the machine's user.
func retiredDir() string {
	return filepath.Join(os.TempDir(), "fairrw-retired-ports")
}

// Retire records that the server on port stopped for good: FreePort does
// not return port for RetiredFor. Best effort: a port whose record cannot
// be written is only not protected.
func Retire(port int) { mark(port, time.Now()) }

// Hold records that a server of this harness listens on port, for up to
// d: FreePort does not return port until d and RetiredFor more have
// passed, or RetiredFor after Retire records its end. For a server its
// test may close before it ends (miniredis's Close), whose port must not
// go to another test's server while a Client of the first may still send
// to it.
func Hold(port int, d time.Duration) { mark(port, time.Now().Add(d)) }

// mark sets port's record to at, creating it if need be.
func mark(port int, at time.Time) {
	dir := retiredDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return
	}
	f := filepath.Join(dir, strconv.Itoa(port))
	if err := os.Chtimes(f, at, at); err == nil {
		return
	}
	if w, err := os.Create(f); err == nil {
		_ = w.Close()
		_ = os.Chtimes(f, at, at)
	}
}

// retired reports whether port was retired within RetiredFor.
func retired(port int) bool {
	fi, err := os.Stat(filepath.Join(retiredDir(), strconv.Itoa(port)))
	return err == nil && time.Since(fi.ModTime()) < RetiredFor
}

// Command sends one command in RESP and returns the first reply line without
// its CRLF. It uses a plain connection so that no client library goroutines
// are involved.
func Command(addr string, timeout time.Duration, args ...string) (string, error) {
	var line string
	err := send(addr, timeout, args, func(r *bufio.Reader) (err error) {
		line, err = r.ReadString('\n')
		return err
	})
	return strings.TrimRight(line, "\r\n"), err
}

// send sends one command in RESP on a plain connection to addr, and reads
// its reply with read, all within timeout.
func send(addr string, timeout time.Duration, args []string, read func(*bufio.Reader) error) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return err
	}
	return read(bufio.NewReader(conn))
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

// ProcessID returns the process_id that the server at addr reports in
// INFO server.
func ProcessID(addr string, timeout time.Duration) (int, error) {
	var info string
	err := send(addr, timeout, []string{"INFO", "server"}, func(r *bufio.Reader) error {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimRight(head, "\r\n"), "$"))
		if err != nil || !strings.HasPrefix(head, "$") {
			return fmt.Errorf("INFO server answered %q", strings.TrimRight(head, "\r\n"))
		}
		body := make([]byte, n)
		_, err = io.ReadFull(r, body)
		info = string(body)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server of %s has no process_id", addr)
}

// ErrPortTaken is WaitOwnServer's error when another process's server
// answers on the address: the caller tries another port, as after
// "Address already in use".
var ErrPortTaken = errors.New("port taken by another process")

// WaitOwnServer is WaitPing for the server that process pid starts on
// addr: once addr answers, it checks that the server answering is that
// process. With two suites on one machine, another suite's server took a
// port between FreePort and this server's bind: this one then failed
// with "Address already in use" while the other answered its PING, and a
// cluster was made of a foreign server ("is not configured as a cluster
// node"). That is reported as ErrPortTaken.
func WaitOwnServer(addr string, timeout time.Duration, pid int, exited <-chan struct{}) error {
	if err := WaitPing(addr, timeout, exited); err != nil {
		return err
	}
	got, err := ProcessID(addr, timeout)
	if err != nil {
		return fmt.Errorf("who answers on %s: %w", addr, err)
	}
	if got != pid {
		return fmt.Errorf("%w: %s answers for process %d, not %d", ErrPortTaken, addr, got, pid)
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
