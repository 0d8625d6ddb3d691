#!/usr/bin/env bash
# The test command (README, "Tests"): on a fresh Debian machine with Go, as
# root (or with sudo), it installs and starts what the tests need and runs
# every test of the three modules (the library, bench/ and integration/).
#
#   bash .ci/test.sh
#
# 1. installs redis-server, redis-tools and redis-sentinel from Debian's
#    packages, and a C compiler for -race, when missing
# 2. when a Docker engine answers: builds the local Redis image for the
#    container tests (.ci/redis-image.sh); without an engine or image those
#    tests skip with the reason, unless FAIRRW_REQUIRE_DOCKER=1
# 3. checks the library's weight: a program importing fairrw needs at most
#    30 modules, and the library's go directive is not above 1.25
# 4. go test -race over every package of the three modules, six packages
#    at a time (FAIRRW_TEST_PACKAGES), the slowest first; about 7 minutes
#    on 2 cores from empty Go caches
#
# FAIRRW_REQUIRE_REDIS=1 is set: a test that needs Redis fails instead of
# skipping. Extra arguments go to go test (e.g. -run TestConformance).
set -euo pipefail

export PATH="/usr/local/go/bin:${PATH}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "need root (or sudo) to run: $*" >&2
		return 1
	fi
}

stop_service() {
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl stop "$1" >/dev/null 2>&1 || true
		as_root systemctl disable "$1" >/dev/null 2>&1 || true
	elif command -v service >/dev/null 2>&1; then
		as_root service "$1" stop >/dev/null 2>&1 || true
	fi
}

echo "== tools"
command -v go >/dev/null 2>&1 || { echo "go not found (install Go 1.25 or later)" >&2; exit 1; }
go version
packages=()
if ! command -v redis-server >/dev/null 2>&1; then
	packages+=(redis-server)
fi
if ! command -v redis-cli >/dev/null 2>&1; then
	packages+=(redis-tools)
fi
# The Sentinel tests start redis-sentinel (Debian ships it on its own).
if ! command -v redis-sentinel >/dev/null 2>&1; then
	packages+=(redis-sentinel)
fi
# go test -race needs cgo, hence a C compiler and the libc headers.
if ! command -v "$(go env CC)" >/dev/null 2>&1; then
	packages+=(gcc libc6-dev)
fi
if [ "${#packages[@]}" -gt 0 ]; then
	echo "installing: ${packages[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
	# The packages start system services on 6379 and 26379. The tests start
	# their own servers on free ports: do not leave unexpected ones around.
	stop_service redis-server
	stop_service redis-sentinel
fi
redis-server --version
if [ "$(go env CGO_ENABLED)" != "1" ]; then
	echo "cgo is disabled (CGO_ENABLED=$(go env CGO_ENABLED), CC=$(go env CC)); go test -race needs it" >&2
	exit 1
fi

echo "== Docker"
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	export FAIRRW_REDIS_IMAGE="${FAIRRW_REDIS_IMAGE:-fairrw/redis:local}"
	# The reaper container's image cannot be pulled where no registry is
	# reachable; the tests remove their containers themselves.
	export TESTCONTAINERS_RYUK_DISABLED="${TESTCONTAINERS_RYUK_DISABLED:-true}"
	if bash .ci/redis-image.sh; then
		echo "container tests run on ${FAIRRW_REDIS_IMAGE}"
	else
		echo "could not build ${FAIRRW_REDIS_IMAGE}: the container tests will skip (or fail with FAIRRW_REQUIRE_DOCKER=1)"
	fi
else
	echo "no Docker engine answers: the container tests will skip (or fail with FAIRRW_REQUIRE_DOCKER=1)"
fi

echo "== library weight"
bash .ci/weight.sh

echo "== go test"
export FAIRRW_REQUIRE_REDIS=1
# A panic prints every goroutine, so that one on a goroutine of rueidis's
# (its reader's "protocol bug, message handled out of order", seen once in
# integration/connect under load) shows which test was running.
export GOTRACEBACK=all
# One go test over the three modules, several packages at once: the
# integration tests are split by concern into packages (integration/acl,
# cluster, sentinel, conformance, ...) that mostly wait (for leases,
# failovers, expiries) rather than compute, so six side by side on 2 cores
# take little more than the slowest (the CPUs were 46% busy at four: 637
# CPU-seconds in a 693 s run, 2026-11-27). FAIRRW_TEST_PACKAGES sets how
# many (go test -p). Extra arguments go to go test (e.g. -run TestConformance).
#
# go test starts packages in the order they are named, so the slowest come
# first (the times of docs/testing.md): started last, the Sentinel suite
# alone ran for the final three minutes of a run. The patterns after them
# name every other package (go test runs each package once).
slowest_first=(
	./integration/behaviour ./integration/cluster ./integration/sentinel ./fairrw
	./integration/cohort ./bench/cmd/fairbench ./integration/acl ./integration/lease
	./integration/faults ./integration/connect ./integration/policy ./integration/deadline
	./integration/quorum ./integration/readshare ./integration/conformance
	./internal/testkit/redistest ./integration/shutdown
)
go test -race -count=1 -p "${FAIRRW_TEST_PACKAGES:-6}" -timeout 30m "$@" \
	"${slowest_first[@]}" ./... ./bench/... ./integration/...
