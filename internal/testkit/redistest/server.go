package redistest

import (
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

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

const (
	startTimeout = 10 * time.Second // until a new redis-server answers PING
	stopTimeout  = 10 * time.Second // until a stopped/killed redis-server has exited
	portAttempts = 5                // fresh ports tried when one was taken meanwhile
)

// envTimeout bounds the wait for FAIRRW_REDIS_ADDR to answer PING (a
// variable for tests).
var envTimeout = startTimeout

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd.Wait returned
	err  error         // cmd.Wait's result, valid after done is closed
}

// Start returns a real Redis for the test, cleaned up with tb.Cleanup:
//
//  1. FAIRRW_REDIS_ADDR set: that address (Kind "env") once it answers PING;
//     nothing is flushed.
//  2. redis-server on PATH: a fresh process on a free loopback port (Kind
//     "process"), see StartProcess.
//  3. otherwise the test is skipped, or fails when FAIRRW_REQUIRE_REDIS=1.
func Start(tb testing.TB) *Redis {
	tb.Helper()
	if addr := os.Getenv(EnvAddr); addr != "" {
		if err := redisnet.WaitPing(addr, envTimeout, nil); err != nil {
			tb.Fatalf("redistest: %s=%s: %v", EnvAddr, addr, err)
		}
		return &Redis{Addr: addr, Kind: KindEnv}
	}
	if bin, err := lookRedisServer(); err == nil {
		return startProcess(tb, bin, nil)
	}
	unavailable(tb, requireRedis(), EnvRequireRedis,
		"no Redis available: %s is not set and redis-server is not on PATH (apt-get install redis-server)", EnvAddr)
	return nil
}

// StartProcess always starts a fresh redis-server process from PATH, for
// tests that stop, restart, kill or pause it. It listens on a free port on
// 127.0.0.1 and runs with
//
//	--port N --bind 127.0.0.1 --save "" --appendonly no --dir <tb.TempDir()>
//
// followed by extraArgs (which may override those). Its stdout and stderr go
// to a file in the same temporary directory whose tail is reported when it
// fails to start. The process is killed and waited for at cleanup.
//
// Without redis-server on PATH the test is skipped, or fails when
// FAIRRW_REQUIRE_REDIS=1.
func StartProcess(tb testing.TB, extraArgs ...string) *Redis {
	tb.Helper()
	return startProcess(tb, ServerBinary(tb), extraArgs)
}

// ServerBinary returns the path of redis-server on PATH, for a test that
// runs a server its own way; without one the test is skipped, or fails
// when FAIRRW_REQUIRE_REDIS=1, as every test here that needs Redis.
func ServerBinary(tb testing.TB) string {
	tb.Helper()
	bin, err := lookRedisServer()
	if err != nil {
		unavailable(tb, requireRedis(), EnvRequireRedis,
			"redis-server not found on PATH (install it, e.g. apt-get install redis-server): %v", err)
	}
	return bin
}

func lookRedisServer() (string, error) { return exec.LookPath("redis-server") }

func startProcess(tb testing.TB, bin string, extraArgs []string) *Redis {
	tb.Helper()
	return launch(tb, bin, "redis-server.log", func(dir string, port int) ([]string, error) {
		return append([]string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
		}, extraArgs...), nil
	})
}

// launch starts bin (redis-server or redis-sentinel) on a free loopback
// port, with the arguments argsFor gives for its temporary directory and
// that port, and waits until it answers PING. It tries another port when the
// one picked was taken meanwhile. Its output goes to logName in the same
// directory. The process is killed and waited for at cleanup.
func launch(tb testing.TB, bin, logName string, argsFor func(dir string, port int) ([]string, error)) *Redis {
	tb.Helper()
	dir := tb.TempDir()
	r := &Redis{
		Kind:    KindProcess,
		bin:     bin,
		dir:     dir,
		logPath: filepath.Join(dir, logName),
	}
	// Registered before the first start so that a failing test or a Fatal
	// below still gets the process killed.
	tb.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := r.killLocked(); err != nil {
			tb.Errorf("redistest: cleanup: %v", err)
		}
		r.releasePortLocked()
		if _, p, err := net.SplitHostPort(r.Addr); err == nil {
			if port, err := strconv.Atoi(p); err == nil {
				redisnet.Retire(port)
			}
		}
	})

	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	for attempt := 1; attempt <= portAttempts; attempt++ {
		var port int
		if port, err = redisnet.FreePort(); err != nil {
			tb.Fatalf("redistest: pick a free port: %v", err)
		}
		r.Addr = "127.0.0.1:" + strconv.Itoa(port)
		if r.args, err = argsFor(dir, port); err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		if err = r.startLocked(); err == nil {
			return r
		}
		// Another test may have taken the port between FreePort and the
		// bind; anything else is fatal at once.
		if !strings.Contains(err.Error(), "Address already in use") && !errors.Is(err, redisnet.ErrPortTaken) {
			break
		}
	}
	tb.Fatalf("redistest: %v", err)
	return nil
}

// startLocked starts redis-server with r.args and waits until it answers PING.
func (r *Redis) startLocked() error {
	if r.proc != nil {
		return fmt.Errorf("redis-server at %s is already running", r.Addr)
	}
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== redistest %s: %s %q\n", time.Now().Format(time.RFC3339Nano), r.bin, r.args)
	cmd := exec.Command(r.bin, r.args...)
	cmd.Dir = r.dir
	// An *os.File is handed to the child as is: no copying goroutine.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start %s: %w", r.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	r.proc, r.paused = p, false

	if err := redisnet.WaitOwnServer(r.Addr, startTimeout, cmd.Process.Pid, p.done); err != nil {
		if kerr := r.killLocked(); kerr != nil {
			err = errors.Join(err, kerr)
		} else if p.err != nil {
			err = fmt.Errorf("%w (%v)", err, p.err)
		}
		return fmt.Errorf("%s %q: %w\n---- tail of %s ----\n%s\n----", r.bin, r.args, err, r.logPath, tail(r.logPath, 40))
	}
	r.releasePortLocked()
	return nil
}

// holdPortLocked holds the port of a server just stopped, so that it can
// start again on it: with two suites on one machine, another suite's server
// or connection took a port in the 7 s a test kept its server down
// ("Address already in use" at the restart). Best effort: a port taken
// before the hold is reported when the server starts again.
func (r *Redis) holdPortLocked() {
	if r.unhold != nil {
		return
	}
	_, p, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return
	}
	if release, err := reservePort(port); err == nil {
		r.unhold = release
	}
}

// releasePortLocked ends holdPortLocked's hold, if any.
func (r *Redis) releasePortLocked() {
	if r.unhold != nil {
		r.unhold()
		r.unhold = nil
	}
}

// killLocked sends SIGKILL (which also ends a stopped process) and waits for
// the exit. No-op when not running.
func (r *Redis) killLocked() error {
	p := r.proc
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Kill()
	return r.waitLocked(p, "SIGKILL")
}

// stopLocked shuts redis-server down with SHUTDOWN NOSAVE (falling back to
// SIGTERM, then SIGKILL) and waits for the exit. No-op when not running.
func (r *Redis) stopLocked() error {
	p := r.proc
	if p == nil {
		return nil
	}
	if r.paused {
		if sigCont != nil {
			_ = p.cmd.Process.Signal(sigCont)
		}
		r.paused = false
	}
	// The connection is closed by the server instead of a reply.
	if _, err := redisnet.Command(r.Addr, 2*time.Second, "SHUTDOWN", "NOSAVE"); err != nil && sigTerm != nil {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(sigTerm)
		}
	}
	select {
	case <-p.done:
		r.proc = nil
		return nil
	case <-time.After(stopTimeout):
	}
	return r.killLocked()
}

func (r *Redis) waitLocked(p *process, how string) error {
	select {
	case <-p.done:
		r.proc, r.paused = nil, false
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("redis-server pid %d at %s did not exit within %v of %s", p.cmd.Process.Pid, r.Addr, stopTimeout, how)
	}
}

// needProcess skips or fails (FAIRRW_REQUIRE_REDIS=1) unless r is a process.
func (r *Redis) needProcess(tb testing.TB, method string) {
	tb.Helper()
	if r.Kind != KindProcess {
		unavailable(tb, requireRedis(), EnvRequireRedis,
			"Redis.%s needs a Redis of kind %q (use StartProcess), this one is %q at %s",
			method, KindProcess, r.Kind, r.Addr)
	}
}

// Stop shuts the server down (SHUTDOWN NOSAVE, or a signal when that fails)
// and waits for it to exit. Stopping a stopped server does nothing.
func (r *Redis) Stop(tb testing.TB) {
	tb.Helper()
	r.needProcess(tb, "Stop")
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.stopLocked(); err != nil {
		tb.Fatalf("redistest: stop: %v", err)
	}
	r.holdPortLocked()
}

// Restart stops the server (if running) and starts it again with the same
// arguments on the same port, waiting until it answers PING. Data is lost
// unless extra arguments enabled persistence.
func (r *Redis) Restart(tb testing.TB) {
	tb.Helper()
	r.needProcess(tb, "Restart")
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.stopLocked(); err != nil {
		tb.Fatalf("redistest: restart: %v", err)
	}
	r.holdPortLocked()
	if err := r.startLocked(); err != nil {
		tb.Fatalf("redistest: restart: %v", err)
	}
}

// Kill sends SIGKILL and waits for the process to exit. Killing a stopped
// server does nothing.
func (r *Redis) Kill(tb testing.TB) {
	tb.Helper()
	r.needProcess(tb, "Kill")
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.killLocked(); err != nil {
		tb.Fatalf("redistest: kill: %v", err)
	}
	r.holdPortLocked()
}

// Pause freezes the server with SIGSTOP: connections stay open but nothing is
// answered until Resume. Stop, Restart, Kill and cleanup work on a paused
// server.
func (r *Redis) Pause(tb testing.TB) {
	tb.Helper()
	r.needProcess(tb, "Pause")
	r.signal(tb, "Pause", sigStop, true)
}

// Pid is the process id of the running redis-server, 0 when none runs.
func (r *Redis) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil || r.proc.cmd.Process == nil {
		return 0
	}
	return r.proc.cmd.Process.Pid
}

// Resume continues a server frozen by Pause (SIGCONT).
func (r *Redis) Resume(tb testing.TB) {
	tb.Helper()
	r.needProcess(tb, "Resume")
	r.signal(tb, "Resume", sigCont, false)
}

func (r *Redis) signal(tb testing.TB, method string, sig os.Signal, paused bool) {
	tb.Helper()
	if sig == nil {
		tb.Skipf("redistest: Redis.%s is not supported on this platform", method)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		tb.Fatalf("redistest: Redis.%s: redis-server at %s is not running", method, r.Addr)
	}
	if err := r.proc.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("redistest: Redis.%s: %v", method, err)
	}
	r.paused = paused
}
