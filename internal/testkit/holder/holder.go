//go:build unix

// Package holder runs a lock holder in a child process, so that the
// reliability tests can kill it (kill -9) or pause it (SIGSTOP) while it
// holds a lock, as a crashed or frozen service would.
//
// The child is the test binary itself, started again with an environment
// variable that makes its TestMain call RunIfChild first: the child takes the
// lock, prints one line "granted <token> <deadline unix ms>" on stdout, and
// then holds it (its watchdog renewing the lease) until it is killed, or
// until its stdin closes, when it unlocks and exits.
package holder

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/locktest"
)

// envSpec carries the child's Spec, as JSON.
const envSpec = "FAIRRW_HOLDER_SPEC"

// Spec is what the child holds.
type Spec struct {
	Addr   string        // Redis host:port
	Policy string        // "redisson", "writer-preferring" or "phase-fair"
	Name   string        // lock name
	Write  bool          // write (else read)
	Lease  time.Duration // watchdog lease time
	// URL, when set, is given to fairrw.WithURL instead of Addr.
	URL string
	// Env is added to the child's environment (SSL_CERT_FILE, say): not
	// sent to the child, which reads its environment as it is.
	Env []string `json:"-"`
}

// Process is a running holder.
type Process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// Token is the fencing token of the child's grant.
	Token uint64
	// Deadline is the child's local lease deadline right after the grant.
	Deadline time.Time
	exited   chan struct{}
}

// RunIfChild runs the holder and exits when this process was started as
// one; otherwise it returns at once. Call it first in TestMain.
func RunIfChild() {
	raw := os.Getenv(envSpec)
	if raw == "" {
		return
	}
	var s Spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, "holder: bad spec:", err)
		os.Exit(2)
	}
	if err := hold(s); err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func hold(s Spec) error {
	p, err := locktest.PolicyByName(s.Policy)
	if err != nil {
		return err
	}
	conn := fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{s.Addr}})
	if s.URL != "" {
		conn = fairrw.WithURL(s.URL)
	}
	c, err := fairrw.New(conn, fairrw.WithPolicy(p), fairrw.WithLeaseTime(s.Lease))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := c.RWMutex(s.Name)
	var l *fairrw.Lease
	if s.Write {
		l, err = m.Lock(ctx)
	} else {
		l, err = m.RLock(ctx)
	}
	if err != nil {
		return err
	}
	fmt.Printf("granted %d %d\n", l.Token(), l.Deadline().UnixMilli())
	_, _ = io.Copy(io.Discard, os.Stdin) // hold until stdin closes (or a kill)
	return l.Unlock(context.Background())
}

// Start runs a holder child for s and waits for its grant (at most 30s).
// t's cleanup kills it if it still runs.
func Start(t testing.TB, s Spec) *Process {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), s.Env...), envSpec+"="+string(raw))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.Kill)
	select {
	case line := <-lines:
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "granted" {
			p.Kill()
			t.Fatalf("holder child: unexpected first line %q", line)
		}
		p.Token, _ = strconv.ParseUint(f[1], 10, 64)
		ms, _ := strconv.ParseInt(f[2], 10, 64)
		p.Deadline = time.UnixMilli(ms)
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatal("holder child: no grant within 30s")
	}
	return p
}

// Kill kills the child with SIGKILL (a crash: no unlock) and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued on some kernels
	<-p.exited
}

// Pause freezes the child (SIGSTOP): it neither renews nor unlocks.
func (p *Process) Pause() { _ = p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused child (SIGCONT).
func (p *Process) Resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

// Release closes the child's stdin: it unlocks and exits. It waits for the
// exit, at most 10s.
func (p *Process) Release(t testing.TB) {
	t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Fatal("holder child did not exit after release")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("holder child exited with %d", code)
	}
}
