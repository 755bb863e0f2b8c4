#!/usr/bin/env bash
# Soak: run every test binary of the workspace RUNS times, the way CI runs
# them (a clean environment: HOME, PATH, TERM=dumb, CI=true), optionally
# beside N processes that keep CPUs busy, in a random order per run, and
# print per test how often it failed with the first lines of its failure.
#
# Usage: scripts/soak.sh [RUNS] [--load N] [--filter SUBSTRING] [--keep]
#   RUNS          how many times each test binary runs (default 5)
#   --load N      N CPU-burning stress-ng workers for the whole soak
#                 (`--load 2` keeps both cores of a CI machine busy)
#   --filter S    only tests whose name contains S (libtest's filter)
#   --keep        keep every run's output under target/soak/ (default: only
#                 the failed runs' output is kept)
# Exit status: 0 when no test failed in any run.
#
# It builds once (`cargo test --no-run`), installs what the tests need
# (`scripts/test.sh --deps-only`) and, with --load, stress-ng (Debian
# package stress-ng, checked by a CPU stressor that runs), then runs each
# binary itself from its package's folder, as `cargo test` does. Tests
# are shuffled by libtest's own `--shuffle` (an unstable libtest option,
# enabled for the test binaries only through RUSTC_BOOTSTRAP=1 at run
# time; the code under test is built as usual); each run prints its seed,
# and `SOAK_SEED=N` repeats an order. It ends with the ten slowest tests
# (libtest's --report-time, the longest of the runs).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
load=0
filter=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --load) load=${2:?--load needs a number}; shift 2 ;;
    --filter) filter=${2:?--filter needs a substring}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *[!0-9]*|'') echo "soak: unknown argument $1 (see --help)" >&2; exit 2 ;;
    *) runs=$1; shift ;;
  esac
done
log() { printf '== soak: %s\n' "$*" >&2; }

./scripts/test.sh --deps-only
export PATH="$PWD/target/venv/bin:$PATH:/usr/sbin:/sbin"

has_stress_ng() { stress-ng --cpu 1 --cpu-method int8 --timeout 1s --quiet >/dev/null 2>&1; }
if [ "$load" -gt 0 ] && ! has_stress_ng; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  log "installing stress-ng (Debian package) for --load"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends stress-ng >/dev/null
  has_stress_ng || { log "stress-ng does not run a CPU stressor; install it and run again"; exit 1; }
fi

out=target/soak
rm -rf "$out"; mkdir -p "$out"
log "building the test binaries once"
cargo test --workspace --locked --no-run --message-format=json 2>"$out/build.log" >"$out/build.json" \
  || { tail -30 "$out/build.log"; exit 1; }
# executable<TAB>package folder, one per test binary.
python3 - "$out/build.json" >"$out/binaries.tsv" <<'PY'
import json, os, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"].get("test"):
        print(f"{m['executable']}\t{os.path.dirname(m['manifest_path'])}")
PY
log "$(wc -l <"$out/binaries.tsv") test binaries, $runs runs, load $load, filter '${filter:-none}'"

stress_pid=""
stop_load() { [ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null; wait 2>/dev/null || true; }
trap stop_load EXIT
if [ "$load" -gt 0 ]; then
  stress-ng --cpu "$load" --cpu-method int8 --quiet --timeout 0 >/dev/null 2>&1 &
  stress_pid=$!
  log "stress-ng: $load CPU workers (pid $stress_pid)"
fi

started=$(date +%s)
for run in $(seq 1 "$runs"); do
  seed=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
  log "run $run of $runs (shuffle seed $seed)"
  while IFS=$'\t' read -r exe dir; do
    name=$(basename "$exe")
    result="$out/run$run-$name.log"
    args=(-Z unstable-options --shuffle --shuffle-seed "$seed" --report-time)
    [ -n "$filter" ] && args+=("$filter")
    t0=$(date +%s)
    set +e
    (cd "$dir" && env -i HOME="$HOME" PATH="$PATH" TERM=dumb CI=true RUSTC_BOOTSTRAP=1 \
      "$exe" "${args[@]}") >"$result" 2>&1
    rc=$?
    set -e
    summary=$(grep -E '^test result:' "$result" | tail -1 || true)
    printf '   %-45s %4ss  %s\n' "$name" "$(( $(date +%s) - t0 ))" "${summary:-exit $rc}" >&2
    # Per-test times (libtest's --report-time: "test NAME ... ok <1.234s>").
    sed -n 's/^test \(.*\) \.\.\. [a-zA-Z]* <\([0-9.]*\)s>$/\2\t\1/p' "$result" >>"$out/times.tsv"
    if [ "$rc" -eq 0 ] && [ "$keep" -eq 0 ]; then rm -f "$result"; fi
  done <"$out/binaries.tsv"
done
elapsed=$(( $(date +%s) - started ))

# Per test: failures out of runs, and the first lines of its first failure.
python3 - "$out" "$runs" "$elapsed" <<'PY'
import glob, os, re, sys
out, runs, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failed, first = {}, {}
for path in sorted(glob.glob(os.path.join(out, "run*-*.log"))):
    text = open(path, errors="replace").read()
    # libtest's line, with or without --report-time's " <1.234s>".
    names = re.findall(r"^test (\S+) \.\.\. FAILED(?: <[0-9.]+s>)?$", text, re.M)
    if not names and re.search(r"^test result: FAILED", text, re.M):
        names = [os.path.basename(path)]  # failed, and no test line says which
    for name in names:
        failed[name] = failed.get(name, 0) + 1
        if name not in first:
            block = re.search(r"^---- " + re.escape(name) + r" stdout ----\n(.*?)(?=^---- |^failures:$)", text, re.M | re.S)
            lines = block.group(1).splitlines() if block else []
            keep = [l for l in lines if "panicked" in l or "FAILED" in l or "not within" in l][:3] or lines[-4:]
            first[name] = (os.path.basename(path), keep)
    if "test result:" not in text:
        failed[os.path.basename(path)] = failed.get(os.path.basename(path), 0) + 1
        first.setdefault(os.path.basename(path), (path, text.splitlines()[-5:]))
print(f"\nsoak: {runs} runs in {elapsed} s")
slowest = {}
times_path = os.path.join(out, "times.tsv")
if os.path.exists(times_path):
    for line in open(times_path):
        seconds, _, name = line.rstrip("\n").partition("\t")
        try:
            slowest[name] = max(slowest.get(name, 0.0), float(seconds))
        except ValueError:
            pass
if slowest:
    print("slowest tests (longest of the runs):")
    for name, seconds in sorted(slowest.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {seconds:8.1f} s  {name}")
if not failed:
    print("soak: every test passed in every run")
    sys.exit(0)
print(f"{'test':<90} failed")
for name, count in sorted(failed.items(), key=lambda kv: -kv[1]):
    print(f"{name:<90} {count}/{runs}")
    where, lines = first[name]
    print(f"    first failure ({where}):")
    for line in lines:
        print(f"      {line[:200]}")
sys.exit(1)
PY
