#!/usr/bin/env bash
# Build a minimal local Redis image for testcontainers-go, without any
# registry: a FROM-scratch image holding this machine's redis-server binary
# plus every shared library it links against (and the dynamic loader).
#
#   bash .ci/redis-image.sh
#
# Image name: $FAIRRW_REDIS_IMAGE (default fairrw/redis:local).
# Idempotent: the image carries a label with the checksum of its contents and
# is only re-created when that changes; it is always verified by running it.
# Exits 0 with a message when no Docker engine answers.
set -euo pipefail

IMAGE="${FAIRRW_REDIS_IMAGE:-fairrw/redis:local}"
LABEL_KEY="io.github.fairrw.redis-image.sum"

log() { printf 'redis-image: %s\n' "$*"; }
die() { printf 'redis-image: ERROR: %s\n' "$*" >&2; exit 1; }

if ! command -v docker >/dev/null 2>&1; then
	log "no docker CLI on PATH; nothing to do"
	exit 0
fi
if ! docker info >/dev/null 2>&1; then
	log "no Docker engine answers (docker info failed); nothing to do"
	exit 0
fi

src="$(command -v redis-server || true)"
[ -n "$src" ] || die "redis-server not found on PATH (apt-get install redis-server)"
command -v ldd >/dev/null 2>&1 || die "ldd not found"

# On Debian /usr/bin/redis-server is a symlink to redis-check-rdb (one binary,
# behaviour chosen by argv[0]), so resolve it and copy the real file under the
# name redis-server: started as redis-check-rdb it would check an RDB file
# instead of serving.
real="$(readlink -f "$src")"
[ -f "$real" ] || die "cannot resolve $src"
log "redis-server: $src -> $real ($("$src" --version 2>/dev/null | head -n1))"

work="$(mktemp -d)"
verify_name=""
cleanup() {
	if [ -n "$verify_name" ]; then
		docker rm -f "$verify_name" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

root="$work/rootfs"
mkdir -p "$root/usr/bin" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$real" "$root/usr/bin/redis-server"
chmod 0755 "$root/usr/bin/redis-server"

# Libraries: "name => /path (0x...)" and the loader line "/lib64/ld-... (0x...)".
# Copy each under the path ldd printed, dereferencing symlinks.
ldd_out="$(ldd "$real")" || die "ldd $real failed"
if grep -q 'not found' <<<"$ldd_out"; then
	die "missing shared libraries for $real:"$'\n'"$ldd_out"
fi
libdirs=()
while read -r lib; do
	[ -n "$lib" ] || continue
	[ -e "$lib" ] || die "ldd listed $lib but it does not exist"
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
	d="$(dirname "$lib")"
	case " ${libdirs[*]-} " in *" $d "*) ;; *) libdirs+=("$d") ;; esac
done < <(awk '
	$2 == "=>" && $3 ~ /^\// { print $3; next }
	$1 ~ /^\// { print $1 }
' <<<"$ldd_out")
[ "${#libdirs[@]}" -gt 0 ] || die "ldd listed no libraries for $real"
interp=""
if command -v readelf >/dev/null 2>&1; then
	interp="$(readelf -l "$real" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')"
fi
if [ -n "$interp" ] && [ ! -e "$root$interp" ]; then
	mkdir -p "$root$(dirname "$interp")"
	cp -L "$interp" "$root$interp"
fi
ld_path="$(IFS=:; echo "${libdirs[*]}")"

# Checksum over file names and contents; deterministic across runs.
sum="$(cd "$root" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-64)"
have="$(docker image inspect --format "{{ index .Config.Labels \"$LABEL_KEY\" }}" "$IMAGE" 2>/dev/null || true)"

if [ "$have" = "$sum" ]; then
	log "image $IMAGE is up to date (sum ${sum:0:12})"
else
	log "building $IMAGE from $(find "$root" -type f | wc -l) files (sum ${sum:0:12})"
	# docker import of a tarball: needs no builder (BuildKit/buildx or the
	# legacy one) and no base image; --change applies Dockerfile instructions.
	tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$work/rootfs.tar" .
	docker import \
		--change 'ENTRYPOINT ["/usr/bin/redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]' \
		--change 'EXPOSE 6379' \
		--change 'WORKDIR /data' \
		--change "ENV LD_LIBRARY_PATH=$ld_path" \
		--change "LABEL $LABEL_KEY=$sum" \
		"$work/rootfs.tar" "$IMAGE" >/dev/null
	log "built $IMAGE ($(docker image inspect --format '{{.Id}}' "$IMAGE"))"
fi

# Verify: run it briefly and PING it, first on the container IP, then on the
# published loopback port.
ping_redis() { # host port
	if command -v redis-cli >/dev/null 2>&1; then
		[ "$(timeout 3 redis-cli -h "$1" -p "$2" ping 2>/dev/null)" = "PONG" ]
	else
		timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf "PING\r\n" >&3 && IFS= read -r l <&3 && [ "${l%$'"'"'\r'"'"'}" = "+PONG" ]' _ "$1" "$2"
	fi
}

verify_name="fairrw-redis-verify-$$"
docker run -d --name "$verify_name" -p 127.0.0.1::6379 "$IMAGE" >/dev/null
ip="$(docker inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$verify_name" | awk '{print $1}')"
hostport="$(docker port "$verify_name" 6379/tcp | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p' | head -n1)"
ok=""
for _ in $(seq 1 50); do
	if [ -n "$ip" ] && ping_redis "$ip" 6379; then ok="$ip:6379"; break; fi
	if [ -n "$hostport" ] && ping_redis 127.0.0.1 "$hostport"; then ok="127.0.0.1:$hostport"; break; fi
	if [ "$(docker inspect --format '{{.State.Running}}' "$verify_name")" != "true" ]; then
		break
	fi
	sleep 0.2
done
if [ -z "$ok" ]; then
	echo "---- container logs ----" >&2
	docker logs "$verify_name" >&2 || true
	die "image $IMAGE did not answer PING (container ip '${ip}', published port '${hostport}')"
fi
log "verified: $IMAGE answers PING at $ok"
