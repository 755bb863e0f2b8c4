#!/usr/bin/env bash
# The one test command (README "Tests"; .ci/run calls exactly this).
# Installs what is missing on a Debian machine, then runs
# cargo fmt --check, cargo clippy -D warnings and cargo test for the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }
# Disk is the scarce resource on CI machines: say what there was and what
# the build took, so a "No space left on device" is easy to read.
disk() { log "disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free; target/ $(du -sh target 2>/dev/null | cut -f1)"; }
disk
trap disk EXIT

# --- system packages the tests start or drive -------------------------------
# command -> Debian package
declare -A PACKAGES=(
  [etcd]=etcd-server          # CoreDNS-etcd provider tests
  [dig]=bind9-dnsutils        # DNS answers as a user sees them
  [kdig]=knot-dnsutils        # differential tests against Knot
  [knotd]=knot                # the peer authoritative server
  [dnsperf]=dnsperf           # bench/
  [protoc]=protobuf-compiler  # etcd-client compiles etcd's protos
  [kubectl]=kubernetes-client # the emulator's kubeconfig must work for kubectl
)
missing=()
for cmd in "${!PACKAGES[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("${PACKAGES[$cmd]}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  log "installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- moto (Route53 API) in a virtualenv under target/ ------------------------
VENV=target/venv
if [ ! -x "$VENV/bin/moto_server" ]; then
  log "installing moto[server] into $VENV"
  python3 -m venv "$VENV" 2>/dev/null || {
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -q python3-venv && python3 -m venv "$VENV"
  }
  "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check 'moto[server]'
fi
export PATH="$PWD/$VENV/bin:$PATH"

# --- Rust checks --------------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "cargo test"
cargo test --workspace --locked
