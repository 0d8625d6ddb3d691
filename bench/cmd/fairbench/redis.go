package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
)

// Kinds of Redis the run can use.
const (
	kindServer    = "redis-server" // started from PATH by fairbench
	kindMiniredis = "miniredis"    // in-process, no redis-server on PATH
	kindExternal  = "external"     // -addr
)

const redisStartTimeout = 10 * time.Second

// redisEnv is the Redis of one run and how to reach and stop it.
type redisEnv struct {
	Kind    string `json:"kind"`
	Addr    string `json:"addr"`
	Version string `json:"version"`
	option  rueidis.ClientOption
	raw     rueidis.Client // INFO, without tracking; nil on miniredis
	stop    func() error
}

// startRedis returns the Redis chosen by -addr and -redis: an existing
// server at addr; a fresh redis-server from PATH on a free loopback port;
// or an in-process miniredis (when asked for, or for "auto" when
// redis-server is not on PATH). The caller must call stop, also on errors.
func startRedis(addr, want string, stderr io.Writer) (*redisEnv, error) {
	switch {
	case addr != "":
		r := &redisEnv{Kind: kindExternal, Addr: addr, stop: func() error { return nil },
			option: rueidis.ClientOption{InitAddress: []string{addr}}}
		if err := redisnet.WaitPing(addr, redisStartTimeout, nil); err != nil {
			return nil, fmt.Errorf("-addr %s: %w", addr, err)
		}
		return r, nil
	case want == "miniredis":
		return startMiniredis()
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if want == "server" {
			return nil, fmt.Errorf("-redis server: %w", err)
		}
		fmt.Fprintf(stderr, "fairbench: redis-server not found on PATH (%v): using an in-process miniredis instead; its figures are not those of a real Redis\n", err)
		return startMiniredis()
	}
	return startServer(bin)
}

func startMiniredis() (*redisEnv, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // TTLs run in real time
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("start miniredis: %w", err)
	}
	return &redisEnv{
		Kind: kindMiniredis, Addr: m.Addr(), Version: "n/a",
		// miniredis speaks RESP2 only and has no client tracking.
		option: rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, AlwaysRESP2: true},
		stop:   func() error { m.Close(); return nil },
	}, nil
}

// startServer runs bin on a free loopback port without persistence, in a
// temporary directory, and waits until it answers PING. Its stop kills it
// (SIGKILL) and waits for the exit; on Linux the kernel also kills it if
// fairbench dies first.
func startServer(bin string) (*redisEnv, error) {
	dir, err := os.MkdirTemp("", "fairbench-redis-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // another process may take the port between pick and bind
		port, err := redisnet.FreePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		r, err := runServer(bin, dir, port)
		if err == nil {
			return r, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "Address already in use") && !errors.Is(err, redisnet.ErrPortTaken) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func runServer(bin, dir string, port int) (*redisEnv, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var out bytes.Buffer
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	kill := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	if err := redisnet.WaitOwnServer(addr, redisStartTimeout, cmd.Process.Pid, exited); err != nil {
		kill()
		return nil, fmt.Errorf("%s on %s: %w\n%s", bin, addr, err, tail(out.String(), 20))
	}
	return &redisEnv{
		Kind: kindServer, Addr: addr,
		option: rueidis.ClientOption{InitAddress: []string{addr}},
		stop: func() error {
			kill()
			return os.RemoveAll(dir)
		},
	}, nil
}

// serverVersion reads redis_version from INFO server; "unknown" when the
// server does not tell.
func serverVersion(ctx context.Context, rdb rueidis.Client) string {
	info, err := rdb.Do(ctx, rdb.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
