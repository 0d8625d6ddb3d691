package fairrwtest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

const (
	startTimeout = 10 * time.Second // until a new redis-server answers PING
	stopTimeout  = 10 * time.Second // until a killed redis-server has exited
	portAttempts = 5                // fresh ports tried when one was taken meanwhile
)

// errPortTaken: another process bound the port between freePort and the
// server's bind; a fresh port is tried.
var errPortTaken = errors.New("port taken")

// process is one running redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	dir  string        // its working directory, removed at stop
}

// NewRedisServer starts a redis-server process (see StartRedisServer) that
// is killed when the test and its subtests end, after the Clients made on it
// later. Without redis-server on PATH it skips the test, or fails it when
// FAIRRW_REQUIRE_REDIS=1.
func NewRedisServer(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartRedisServer()
	if errors.Is(err, errNoRedisServer) {
		if os.Getenv(envRequireRedis) == "1" {
			tb.Fatalf("%v (%s=1, so this fails instead of skipping)", err, envRequireRedis)
		}
		tb.Skipf("%v (set %s=1 to fail instead of skipping)", err, envRequireRedis)
	}
	if err != nil {
		tb.Fatalf("%v", err)
	}
	closeAtCleanup(tb, s)
	return s
}

// StartRedisServer starts redis-server from PATH on a free port of
// 127.0.0.1, with no persistence, in a temporary directory:
//
//	redis-server --port N --bind 127.0.0.1 --save "" --appendonly no --dir <temp>
//
// and returns once it answers PING; the caller must Close it. It returns an
// error wrapping exec.ErrNotFound when redis-server is not on PATH, and one
// with the tail of the server's log when it does not start. On Linux the
// server is also killed when the test binary dies without closing it.
func StartRedisServer() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w (install Redis, e.g. apt-get install redis-server): %w", errNoRedisServer, err)
	}
	dir, err := os.MkdirTemp("", "fairrwtest-redis-")
	if err != nil {
		return nil, fmt.Errorf("fairrwtest: %w", err)
	}
	for range portAttempts {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		var p *process
		if p, err = startProcess(bin, dir, port); err == nil {
			return &Server{
				addr: addr,
				proc: p,
				// A standalone server: no CLUSTER SLOTS probe. RESP3 and
				// client tracking stay on, as on a production Redis.
				option: rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true},
			}, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("fairrwtest: start redis-server: %w", err)
}

// startProcess runs bin on port and waits until it answers PING.
func startProcess(bin, dir string, port int) (*process, error) {
	logPath := filepath.Join(dir, "redis-server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// An *os.File is handed to the child as is: no copying goroutine.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{}), dir: dir}
	// Owned by p: it ends when the process does, which stop ensures.
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitPing(addr, p.done); err != nil {
		_ = p.kill()
		log, _ := os.ReadFile(logPath)
		if strings.Contains(string(log), "Address already in use") {
			return nil, errPortTaken
		}
		return nil, fmt.Errorf("%s %q: %w\n---- %s ----\n%s", bin, args, err, logPath, lastLines(string(log), 20))
	}
	return p, nil
}

// stop kills the server, waits for it to exit and removes its directory.
// Nothing is lost by SIGKILL: the server keeps no data on disk.
func (p *process) stop() error {
	if err := p.kill(); err != nil {
		return err
	}
	return os.RemoveAll(p.dir)
}

func (p *process) kill() error {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("fairrwtest: redis-server pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, stopTimeout)
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPing polls addr with PING, on a plain connection (no client
// goroutines), until it answers +PONG, startTimeout passes, or the process
// exits.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer from %s within %v: %w", addr, startTimeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited before answering PING on %s", addr)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if reply := strings.TrimRight(line, "\r\n"); reply != "+PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
