package container

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"go.uber.org/goleak"

	"github.com/fairrw/rwlock/internal/testkit/redisnet"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// needDocker applies the FAIRRW_REQUIRE_DOCKER rule.
func needDocker(t *testing.T) {
	t.Helper()
	p, err := dockerProvider()
	if err != nil {
		unavailable(t, "no Docker engine answers: %v", err)
	}
	p.Close()
}

func TestStart(t *testing.T) {
	r := Start(t)
	if r.Kind != redistest.KindContainer {
		t.Fatalf("Kind %q", r.Kind)
	}
	t.Logf("container Redis at %s", r.Addr)
	if err := redisnet.Ping(r.Addr); err != nil {
		t.Fatal(err)
	}
	c := r.Client(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
}

func TestMissingImage(t *testing.T) {
	needDocker(t)
	t.Setenv(EnvImage, "fairrw/no-such-image:never")
	start := time.Now()
	t.Setenv(EnvRequireDocker, "")
	f := redistest.RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.SkipMessage(), "never pulled") {
		t.Fatalf("missing image: skip %q fatal %q", f.SkipMessage(), f.FatalMessage())
	}
	t.Setenv(EnvRequireDocker, "1")
	f = redistest.RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.FatalMessage(), "never pulled") {
		t.Fatalf("missing image, %s=1: skip %q fatal %q", EnvRequireDocker, f.SkipMessage(), f.FatalMessage())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("missing image took %v to be reported", d)
	}
}

func TestNoDocker(t *testing.T) {
	// No parallel: replaces newDockerProvider and changes the environment.
	orig := newDockerProvider
	t.Cleanup(func() { newDockerProvider = orig })
	newDockerProvider = func() (*testcontainers.DockerProvider, error) {
		return nil, errors.New("simulated: cannot connect to the Docker daemon")
	}

	t.Setenv(EnvRequireDocker, "")
	f := redistest.RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.SkipMessage(), "no Docker engine") || !strings.Contains(f.SkipMessage(), "simulated") {
		t.Fatalf("Start without Docker: skip %q, fatal %q", f.SkipMessage(), f.FatalMessage())
	}
	t.Setenv(EnvRequireDocker, "1")
	f = redistest.RunFake(t, func(tb testing.TB) { Start(tb) })
	if !strings.Contains(f.FatalMessage(), "no Docker engine") {
		t.Fatalf("Start without Docker, %s=1: skip %q, fatal %q", EnvRequireDocker, f.SkipMessage(), f.FatalMessage())
	}
}
