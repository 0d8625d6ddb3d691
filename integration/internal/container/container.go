// Package container starts Redis in a container through testcontainers-go, for
// the integration tests. It lives in the integration module so that the
// library's module does not depend on testcontainers and the Docker client.
//
// Environment:
//
//	FAIRRW_REDIS_IMAGE      image to start (default fairrw/redis:local, built by
//	                        .ci/redis-image.sh; images are never pulled)
//	FAIRRW_REQUIRE_DOCKER=1 fail, instead of skip, when no Docker engine answers
//	                        or the image is missing
package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// Environment variables read by this package.
const (
	EnvImage         = "FAIRRW_REDIS_IMAGE"
	EnvRequireDocker = "FAIRRW_REQUIRE_DOCKER"

	// DefaultImage is the image Start uses when FAIRRW_REDIS_IMAGE is not set.
	DefaultImage = "fairrw/redis:local"
)

const (
	startTimeout     = 10 * time.Second // until the server answers PING
	ryukEnv          = "TESTCONTAINERS_RYUK_DISABLED"
	containerTimeout = 2 * time.Minute // create + start + wait for the port
)

// Start starts Redis through testcontainers-go from the image named
// by FAIRRW_REDIS_IMAGE (default "fairrw/redis:local", built from the local
// redis-server by .ci/redis-image.sh) and removes it at cleanup. The Addr is
// the published port on the Docker host, and Kind is "container".
//
// Images are never pulled: a missing image fails the test with a hint instead
// of trying a registry. The reaper (Ryuk) is disabled through
// TESTCONTAINERS_RYUK_DISABLED=true unless that variable is already set.
//
// When no Docker engine answers, or the image is not in it, the test is
// skipped with the reason, or fails when FAIRRW_REQUIRE_DOCKER=1.
func Start(tb testing.TB) *redistest.Redis {
	tb.Helper()
	prov, err := dockerProvider()
	if err != nil {
		unavailable(tb, "no Docker engine answers, cannot start a Redis container: %v", err)
	}
	image := containerImage()
	err = imagePresent(prov, image)
	prov.Close()
	if err != nil {
		unavailable(tb, "%v", err)
	}
	return startContainer(tb, image)
}

// newDockerProvider is replaced by tests to simulate a missing engine.
var newDockerProvider = func() (*testcontainers.DockerProvider, error) {
	return testcontainers.NewDockerProvider()
}

func containerImage() string {
	if img := os.Getenv(EnvImage); img != "" {
		return img
	}
	return DefaultImage
}

// dockerProvider returns a Docker provider whose engine answers, like
// testcontainers.SkipIfProviderIsNotHealthy but returning the reason. The
// caller closes it.
func dockerProvider() (prov *testcontainers.DockerProvider, err error) {
	// The reaper would need the testcontainers/ryuk image from a registry.
	// testcontainers reads its configuration once per process, so this has
	// to happen before its first use.
	if _, ok := os.LookupEnv(ryukEnv); !ok {
		os.Setenv(ryukEnv, "true")
	}
	defer func() {
		if r := recover(); r != nil {
			if prov != nil {
				prov.Close()
			}
			prov, err = nil, fmt.Errorf("testcontainers panicked: %v", r)
		}
	}()
	prov, err = newDockerProvider()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := prov.Health(ctx); err != nil {
		prov.Close()
		return nil, err
	}
	return prov, nil
}

// imagePresent checks that image exists in the engine, so that testcontainers
// never falls back to pulling it.
func imagePresent(prov *testcontainers.DockerProvider, image string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := prov.Client().ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("image %q is not available in the local Docker engine (%v); "+
			"build it with `bash .ci/redis-image.sh` or set %s (images are never pulled)",
			image, err, EnvImage)
	}
	return nil
}

func startContainer(tb testing.TB, image string) *redistest.Redis {
	tb.Helper()
	if !testcontainers.ReadConfig().RyukDisabled {
		tb.Logf("container: the testcontainers reaper is enabled (%s=%q); it needs the testcontainers/ryuk image",
			ryukEnv, os.Getenv(ryukEnv))
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        image,
			ExposedPorts: []string{"6379/tcp"},
			// Wait for the port mapping and the server's readiness line only:
			// the image is FROM scratch (no shell for the internal port check),
			// and the external check dials the host testcontainers guesses,
			// which can be wrong (see containerAddr). PING follows below.
			WaitingFor: wait.ForAll(
				wait.ForListeningPort("6379/tcp").SkipInternalCheck().SkipExternalCheck(),
				wait.ForLog("Ready to accept connections"),
			).WithDeadline(time.Minute),
		},
		Started: true,
		Logger:  tclog.TestLogger(tb),
	})
	// Registered before the error check: a created but failed container is
	// removed too.
	testcontainers.CleanupContainer(tb, ctr)
	if err != nil {
		tb.Fatalf("container: start container from %s: %v", image, err)
	}
	addr, err := containerAddr(ctx, ctr)
	if err != nil {
		tb.Fatalf("container: container from %s: %v\n---- container log ----\n%s\n----", image, err, containerLogs(ctx, ctr))
	}
	return &redistest.Redis{Addr: addr, Kind: redistest.KindContainer}
}

// containerAddr returns the first address of the container's Redis that
// answers PING: the container's own IP first (one hop, where a local engine
// routes to it), then testcontainers' own guess (the Docker host plus the
// published port); when the test runs inside a container (/.dockerenv) next
// to a local engine, that guess is the default gateway, which need not reach
// the engine's published ports, so the published port on loopback is tried
// too. With TESTCONTAINERS_HOST_OVERRIDE set only the guess is used.
func containerAddr(ctx context.Context, ctr testcontainers.Container) (string, error) {
	port, err := ctr.MappedPort(ctx, "6379/tcp")
	if err != nil {
		return "", fmt.Errorf("published port: %w", err)
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		return "", fmt.Errorf("docker host: %w", err)
	}
	candidates := []string{net.JoinHostPort(host, port.Port())}
	if _, ok := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !ok {
		if host != "localhost" && host != "127.0.0.1" {
			candidates = append(candidates, net.JoinHostPort("127.0.0.1", port.Port()))
		}
		if ip, err := ctr.ContainerIP(ctx); err == nil && ip != "" {
			// First where this host routes to it (a local Linux engine): a
			// published port on loopback goes through Docker's userland
			// proxy, a process of its own that a loaded machine runs late
			// (the suite's 1 s leases were lost through it under a CPU
			// burner per core); elsewhere it does not answer, and the
			// published port follows.
			candidates = append([]string{net.JoinHostPort(ip, "6379")}, candidates...)
		}
	}
	deadline := time.Now().Add(startTimeout)
	var errs []error
	for {
		errs = errs[:0]
		for _, addr := range candidates {
			if err := redisnet.PingWithin(addr, time.Second); err == nil {
				return addr, nil
			} else {
				errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no PING answer within %v: %w", startTimeout, errors.Join(errs...))
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no PING answer: %w: %w", ctx.Err(), errors.Join(errs...))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func containerLogs(ctx context.Context, ctr testcontainers.Container) string {
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return fmt.Sprintf("(reading logs: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// requireDocker reports whether FAIRRW_REQUIRE_DOCKER=1.
func requireDocker() bool { return os.Getenv(EnvRequireDocker) == "1" }

// unavailable skips the test with the reason, or fails it when
// FAIRRW_REQUIRE_DOCKER=1.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if requireDocker() {
		tb.Fatalf("container: "+format+" (%s=1, so this is an error instead of a skip)", append(args, EnvRequireDocker)...)
	}
	tb.Skipf("container: "+format+" (set %s=1 to make this an error)", append(args, EnvRequireDocker)...)
}
