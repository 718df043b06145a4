#!/usr/bin/env bash
# Installs the Debian 12 packages kvmesh builds and tests with (apt-get), and
# the Node packages of tools/ci (npm ci, when npm is present). Idempotent:
# when everything is already installed it changes nothing and needs no
# network.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# The Node packages CI drives the HTTP gateway with (the official OpenAI and
# Anthropic SDKs, pinned in tools/ci/package-lock.json). Skipped without npm:
# the gateway SDK test then prints SKIP. Re-run only when the lock changed.
install_node_packages() {
  local dir="$ROOT/tools/ci"
  if ! command -v npm >/dev/null; then
    echo "install-deps: npm not found; skipping tools/ci (the gateway SDK test will SKIP)"
    return 0
  fi
  if [ -f "$dir/node_modules/.package-lock.json" ] &&
     [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    echo "install-deps: tools/ci node packages present"
    return 0
  fi
  echo "install-deps: npm ci in tools/ci"
  (cd "$dir" && npm ci --no-audit --no-fund)
}

PACKAGES=(
  build-essential cmake ninja-build pkg-config git clang clang-format ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libcpp-httplib-dev libcivetweb-dev civetweb libssl-dev libxxhash-dev
  libspdlog-dev libfmt-dev libcli11-dev prometheus-cpp-dev libpcre2-dev
  prometheus nghttp2-client jq curl json-schema-test-suite chromium unzip
  podman buildah runc catatonit debootstrap fuse-overlayfs uidmap netavark aardvark-dns
  containernetworking-plugins iptables
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_node_packages
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first (fast, offline-friendly);
# refresh them only if that fails.
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
install_node_packages
