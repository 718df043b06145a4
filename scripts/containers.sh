#!/usr/bin/env bash
# Builds kvmesh's CPU container images with podman and runs the
# containerised cluster (2 workers and a router, host networking on
# loopback), then sends it a request and stops it with SIGTERM.
#
#   ./scripts/containers.sh          # build the images and run the check
#   ./scripts/containers.sh build    # only build localhost/kvmesh-{router,worker}:dev
#
# There is no registry here: the base image is a local Debian 12 made with
# debootstrap (needs root) and tagged as docker.io/library/debian:bookworm-slim,
# so the Dockerfile builds unchanged elsewhere. The binaries are a CPU-only
# build of this checkout (build/containers) copied into the images
# (PREBUILT_DIR), which saves compiling inside the image build; the
# Dockerfile's own build stage does the same from source.
# Env: KVMESH_MODEL (default ../shared/models/stories260K.gguf), PORT_BASE.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-check}
command -v podman >/dev/null || { echo "containers: podman is not installed (scripts/install-deps.sh)" >&2; exit 2; }
work=${KVMESH_CONTAINERS_DIR:-$root/build/containers}
mkdir -p "$work"
# crun fails on this kind of machine's cgroup layout; runc needs the lower limits.
cat >"$work/containers.conf" <<'TOML'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
TOML
export CONTAINERS_CONF="$work/containers.conf"
start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

if ! podman image exists docker.io/library/debian:bookworm-slim; then
  stamp "making a local Debian 12 base image (debootstrap)"
  [ "$(id -u)" -eq 0 ] || { echo "containers: debootstrap needs root" >&2; exit 2; }
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$work/rootfs" -c . | podman import - localhost/bookworm-min:dev >/dev/null
  podman tag localhost/bookworm-min:dev docker.io/library/debian:bookworm-slim
  rm -rf "$work/rootfs"
fi

stamp "building the binaries (CPU only) in $work"
# KVMESH_WERROR as the test build has it, so that with ccache (installed by
# scripts/install-deps.sh) the two builds compile each shared source once.
cmake -S . -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVMESH_CUDA=OFF -DKVMESH_BUILD_TESTS=OFF \
  -DKVMESH_WERROR="${KVMESH_WERROR:-OFF}" >/dev/null
cmake --build "$work" --target kvmesh-router kvmesh-worker kvmesh | tail -1

for target in router worker; do
  stamp "podman build --target $target"
  # Docker format: OCI images have no HEALTHCHECK.
  podman build --format docker --pull=never --network=host --target "$target" \
    --build-arg PREBUILT_DIR="${work#"$root"/}" -t "localhost/kvmesh-$target:dev" \
    -f deploy/docker/Dockerfile . >"$work/build-$target.log" 2>&1 || { tail -30 "$work/build-$target.log" >&2; exit 1; }
done
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep kvmesh-
for target in router worker; do
  echo "kvmesh-$target: user $(podman image inspect --format '{{.Config.User}}' "localhost/kvmesh-$target:dev"), healthcheck $(podman image inspect --format '{{if .Config.Healthcheck}}yes{{else}}no{{end}}' "localhost/kvmesh-$target:dev")"
done
[ "$mode" = build ] && exit 0

model=${KVMESH_MODEL:-$root/../shared/models/stories260K.gguf}
[ -f "$model" ] || { echo "containers: no model at $model (set KVMESH_MODEL)" >&2; exit 2; }
base=${PORT_BASE:-$(( 21000 + $$ % 5000 ))}
names=()
cleanup() { for n in "${names[@]}"; do podman rm -f "$n" >/dev/null 2>&1 || true; done; }
: >"$work/podman.log"  # podman's own complaints (no systemd for healthcheck timers here)
trap cleanup EXIT
run() {  # run NAME IMAGE PREFIX GRPC HTTP ARGS...: a read-only container on the host's loopback
  local name=$1 image=$2 prefix=$3 grpc=$4 http=$5; shift 5
  names+=("$name")
  # Ports by environment, so the image's HEALTHCHECK finds the HTTP port; its
  # timer needs systemd (absent here): `podman healthcheck run` checks it.
  podman run -d --name "$name" --network=host --read-only --tmpfs /tmp --health-interval=disable \
    -e "${prefix}_GRPC_PORT=$grpc" -e "${prefix}_HTTP_PORT=$http" -e "${prefix}_HOST=127.0.0.1" \
    -v "$(dirname "$model"):/models:ro" "$image" "$@" >/dev/null 2>>"$work/podman.log" ||
    { cat "$work/podman.log" >&2; exit 1; }
}
stamp "starting 2 workers and a router (host network, ports from $base)"
for i in 0 1; do
  run "kvmesh-w$i-$$" localhost/kvmesh-worker:dev KVMESH_WORKER $((base + i)) $((base + 10 + i)) \
    --model="/models/$(basename "$model")" --threads=1 --worker-id="worker$i"
done
run "kvmesh-r-$$" localhost/kvmesh-router:dev KVMESH_ROUTER $((base + 20)) $((base + 21)) \
  --workers="127.0.0.1:$base,127.0.0.1:$((base + 1))"
http="127.0.0.1:$((base + 21))"
i=0; until curl -sf "http://$http/healthz" >/dev/null; do
  i=$((i+1)); [ $i -gt 300 ] && { for n in "${names[@]}"; do podman logs "$n" >&2 || true; done; exit 1; }; sleep 0.1
done
i=0; until [ "$(curl -sf "http://$http/v1/models" | jq -r '.data[0].workers')" = 2 ]; do
  i=$((i+1)); [ $i -gt 300 ] && { echo "containers: the router never saw both workers" >&2; exit 1; }; sleep 0.1
done
answer=$(curl -sf "http://$http/v1/completions" -H 'content-type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":16,"temperature":0}')
echo "answer: $answer"
text=$(printf '%s' "$answer" | jq -r '.choices[0].text')
[ -n "$text" ] || { echo "containers: empty answer" >&2; exit 1; }
workers=$(curl -sf "http://$http/v1/models" | jq -r '.data[0].workers')
[ "$workers" = 2 ] || { echo "containers: the router sees $workers workers, want 2" >&2; exit 1; }
echo "uid in the worker container: $(podman exec "kvmesh-w0-$$" id -u)"
for n in "kvmesh-w0-$$" "kvmesh-w1-$$" "kvmesh-r-$$"; do
  podman healthcheck run "$n" >/dev/null || { echo "containers: $n is not healthy by its HEALTHCHECK" >&2; exit 1; }
done
echo "HEALTHCHECK: all 3 containers healthy"
stamp "stopping with SIGTERM (the router drains)"
podman stop -t 30 "kvmesh-r-$$" >/dev/null 2>>"$work/podman.log"
podman logs "kvmesh-r-$$" 2>&1 | grep -E "draining|drained|stopped" | tail -3 || true
stamp "the containerised cluster answered: $(printf '%s' "$text" | head -c 60)"
