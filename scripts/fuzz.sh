#!/usr/bin/env bash
# Fuzz every target in fuzz/ for a while each, as a bench is run (minutes,
# not in CI), and print per target how many inputs ran and whether one
# crashed. Targets: packet (the query path), transfer (AXFR/IXFR and TSIG
# verification), policy_dnssec (traffic policies answered per client in
# a signed compact-denial zone).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS   time per target (default 60)
#   TARGET    only these targets (default: every one)
# Exit status: 0 when no target crashed. A crash leaves its input under
# fuzz/artifacts/TARGET/; replay it with
#   (cd fuzz && cargo +nightly fuzz run TARGET --sanitizer none ARTIFACT)
#
# Needs a nightly toolchain (cargo-fuzz passes -Z flags) and cargo-fuzz;
# both are installed here when missing (rustup, crates.io), checked by
# running them. Corpora grow under fuzz/corpus/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^fedns-fuzz$')
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "installing the nightly toolchain (rustup)"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io)"
  cargo install cargo-fuzz --locked
fi
cargo fuzz --version

failed=0
summary=()
for target in "${targets[@]}"; do
  log="target/fuzz-${target}.log"
  mkdir -p target
  echo "== ${target}: ${seconds} s"
  if (cd fuzz && cargo +nightly fuzz run "$target" --sanitizer none -- \
        -max_total_time="$seconds" -print_final_stats=1) >"$log" 2>&1; then
    status=ok
  else
    status=CRASHED
    failed=1
    tail -n 30 "$log"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  summary+=("$(printf '%-14s %-8s %10s inputs  %7s/s  %s' "$target" "$status" "${runs:-?}" "${speed:-?}" "${cov}")")
done
echo
printf '%s\n' "${summary[@]}"
exit "$failed"
