#!/usr/bin/env bash
# Checks what importing the library costs a program: a fresh module that
# imports fairrw (through a replace to this checkout) must need at most
# $FAIRRW_MAX_MODULES modules (30 by default, itself included), and the
# library's go directive must not be above 1.25, so importing fairrw never
# raises a program's own.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
max="${FAIRRW_MAX_MODULES:-30}"

want_go="1.25"
have_go="$(awk '$1 == "go" { print $2; exit }' "$root/go.mod")"
case "$have_go" in
"$want_go" | "$want_go".*) ;;
*)
	echo "weight: go.mod says go $have_go; the library needs only go $want_go" >&2
	exit 1
	;;
esac

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat >"$dir/go.mod" <<MOD
module example.com/weight

go $want_go

require github.com/fairrw/rwlock v0.0.0

replace github.com/fairrw/rwlock => $root
MOD
cat >"$dir/main.go" <<'GO'
package main

import (
	"context"

	"github.com/fairrw/rwlock/fairrw"
)

func main() {
	c, err := fairrw.New()
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = c.RWMutex("x").TryLock(context.Background())
}
GO
cd "$dir"
GOWORK=off GOFLAGS=-mod=mod go mod tidy >/dev/null
GOWORK=off go build -o /dev/null .
n="$(GOWORK=off go list -m all | wc -l)"
got_go="$(awk '$1 == "go" { print $2; exit }' go.mod)"
echo "weight: a program importing fairrw has $n modules in its graph (at most $max), go $got_go"
if [ "$n" -gt "$max" ]; then
	GOWORK=off go list -m all >&2
	echo "weight: $n modules is more than $max" >&2
	exit 1
fi
if [ "$got_go" != "$want_go" ] && [ "$got_go" != "$want_go.0" ]; then
	echo "weight: importing fairrw raised the program's go directive to $got_go" >&2
	exit 1
fi
