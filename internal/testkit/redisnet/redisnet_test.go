package redisnet

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A retired port is not handed out for RetiredFor; it is again after.
func TestRetiredPortIsNotHandedOut(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if retired(port) {
		t.Fatalf("FreePort returned %d, retired", port)
	}
	Retire(port)
	if !retired(port) {
		t.Fatalf("port %d not retired after Retire", port)
	}
	old := time.Now().Add(-RetiredFor - time.Second)
	if err := os.Chtimes(filepath.Join(retiredDir(), strconv.Itoa(port)), old, old); err != nil {
		t.Fatal(err)
	}
	if retired(port) {
		t.Fatalf("port %d still retired %v after Retire", port, RetiredFor+time.Second)
	}
}

// TestWaitOwnServerTellsAForeignServer: a server that answers on the
// address for another process (it took the port first) is reported as
// ErrPortTaken, and the server of the process waited for is accepted.
func TestWaitOwnServerTellsAForeignServer(t *testing.T) {
	const pid = 4242
	addr := fakeServer(t, pid)
	if err := WaitOwnServer(addr, 2*time.Second, pid, nil); err != nil {
		t.Fatalf("WaitOwnServer for the answering process: %v", err)
	}
	err := WaitOwnServer(addr, 2*time.Second, pid+1, nil)
	if !errors.Is(err, ErrPortTaken) {
		t.Fatalf("WaitOwnServer for another process: %v, want ErrPortTaken", err)
	}
}

// fakeServer answers PING and INFO server (with process_id pid) on a
// loopback port, one command per connection, until the test ends.
func fakeServer(t *testing.T, pid int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(c)
			var words []string
			if head, err := r.ReadString('\n'); err == nil {
				n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "*")))
				for range 2 * n {
					line, _ := r.ReadString('\n')
					if !strings.HasPrefix(line, "$") {
						words = append(words, strings.TrimSpace(line))
					}
				}
			}
			switch {
			case len(words) > 0 && strings.EqualFold(words[0], "PING"):
				_, _ = c.Write([]byte("+PONG\r\n"))
			case len(words) > 0 && strings.EqualFold(words[0], "INFO"):
				body := fmt.Sprintf("# Server\r\nredis_version:7.0.15\r\nprocess_id:%d\r\ntcp_port:1\r\n", pid)
				_, _ = fmt.Fprintf(c, "$%d\r\n%s\r\n", len(body), body)
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}
