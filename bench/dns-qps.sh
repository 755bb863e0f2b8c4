#!/usr/bin/env bash
# Queries per second of fedns's embedded DNS server against Knot DNS and
# NSD (NSD was the fastest open-source authoritative per core in earlier
# measurements here, so the ratio against the strongest peer is printed
# too).
#
# All three serve the same 10,000-name zone, each pinned to CPU 0 with one
# UDP worker; dnsperf runs pinned to CPU 1 (90 % existing names, 10 %
# NXDOMAIN, type A). Three phases per server:
#   1. saturation for $DURATION s: queries/s, average latency, server CPU
#      time per answered query;
#   2. a fixed 10,000 q/s for $LATENCY_DURATION s with per-query latencies:
#      p50/p99;
#   3. TCP saturation for $TCP_DURATION s (dnsperf -m tcp: 4 connections,
#      queries pipelined on each, RFC 7766): queries/s and server CPU time
#      per answered query. TCP is where truncated UDP answers go.
# Then peak RSS of each server and the ratios fedns/Knot and fedns/NSD.
# Absolute figures drift on shared machines; the ratio from one run is
# what to compare. Server CPU is summed over the server's processes and
# threads (NSD serves from child processes).
#
# Then scaling across cores: UDP saturation for $SCALE_DURATION s
# with 1 and 2 workers (and the machine's CPU count less one where it has
# more than 3 CPUs) for each server, pinned to CPUs 0..W-1, dnsperf on the
# next CPU: queries/s, answers per core of server CPU and the scaling ratio
# against one worker. Where the machine has no CPU left for dnsperf it
# shares the servers' CPUs (said in the output): queries/s then understate
# the scaling and answers per core is the figure to compare.
#
# fedns runs with response rate limiting enabled but not triggered, so
# the limiter's cost is in the figures.
#
# Then traffic policies: the same fedns invocation twice, on a
# zone where half the names are under Weighted, Nearest, sticky Weighted
# or All with maxAnswers 2 (10 clusters each, a client table on the
# Domain) and on the same zone without policies,
# with EDNS Client Subnet on half the queries (two dnsperf clients at once,
# one sending ECS 192.0.2.0/24): queries/s, server CPU per answered query
# and the ratios policy/policy-free (target >= 0.9), over REPEAT alternating
# rounds (median).
#
# Then DNSSEC: the same zone signed (ECDSAP256SHA256, a CSK)
# with each denial of existence (compact denial, which signs the answer
# for a missing name per query, and an NSEC chain, signed ahead) against
# the same zone unsigned, DO on every query (dnsperf -D), UDP saturation
# for $DURATION s over REPEAT alternating rounds (median ratio, target
# >= 0.9), and Knot signing the same zone in each round
# (dnssec-signing: on, NSEC, ECDSAP256SHA256 CSK; median ratio, target fedns/Knot
# >= 1.0); then the time to the first answer and the peak RSS of fedns
# serving $BUILD_NAMES names, signed and unsigned (snapshot build time
# and memory, YAML reading included).
#
# Usage: bench/dns-qps.sh   (env: DURATION=20 LATENCY_DURATION=10 TCP_DURATION=$DURATION NAMES=10000 RRL_RATE=1000000
#                            POLICIES=1 (0: skip the policy runs), ONLY_POLICIES=1 (skip Knot and the base run), REPEAT=3,
#                            DNSSEC=1 (0: skip the DNSSEC runs), ONLY_DNSSEC=1 (only them), BUILD_NAMES=100000,
#                            SCALING=1 (0: skip the scaling runs), SCALE_DURATION=10,
#                            FEDNS_BIN=path (use this fedns binary instead of building one))
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20}
LATENCY_DURATION=${LATENCY_DURATION:-10}
TCP_DURATION=${TCP_DURATION:-$DURATION}
NAMES=${NAMES:-10000}
WORK=$(mktemp -d /tmp/fedns-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

for tool in knotd nsd dnsperf taskset python3; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "missing $tool (apt-get install knot nsd dnsperf util-linux)"; exit 1; }
done
KNOTD=$(command -v knotd || echo /usr/sbin/knotd)
NSD=$(command -v nsd || echo /usr/sbin/nsd)
SCALE_DURATION=${SCALE_DURATION:-10}
{ dnsperf -h 2>&1 || true; } | grep -q -- '-m ' || { echo "this dnsperf has no -m (TCP mode); install dnsperf >= 2.3"; exit 1; }

if [ -n "${FEDNS_BIN:-}" ]; then
  # A binary built elsewhere, e.g. an earlier commit's, to compare two
  # builds of fedns against the same Knot.
  FEDNS=$FEDNS_BIN
  echo "== fedns binary: $FEDNS"
else
  echo "== building fedns (release)"
  cargo build --release -q -p fedns-controller
  FEDNS=target/release/fedns
fi

echo "== generating $NAMES names"
python3 - "$WORK" "$NAMES" <<'PY'
import random, sys
work, n = sys.argv[1], int(sys.argv[2])
random.seed(42)
names = [f"svc{i}.ns{i % 50}.myfed.svc.example.com" for i in range(n)]
addr = lambda i: f"203.0.{(i // 250) % 256}.{i % 250 + 1}"
with open(f"{work}/example.com.zone", "w") as z:
    z.write("example.com. 30 IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 1209600 30\n")
    z.write("example.com. 30 IN NS ns1.example.com.\n")
    for i, name in enumerate(names):
        z.write(f"{name}. 30 IN A {addr(i)}\n")
        z.write(f"{name}. 30 IN A {addr(i + 7)}\n")
with open(f"{work}/manifests.yaml", "w") as m:
    m.write("apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: Domain\nmetadata: {name: myfed, namespace: fedns-system}\n")
    m.write("spec: {domain: example.com, nameServers: [ns1.example.com], soa: {ttl: 30, minimum: 30}}\n")
    # One DNSEndpoint per namespace: a service name S.N.myfed.svc is only
    # published from namespace N (one name, one owner).
    for ns in range(50):
        m.write(f"---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: bench, namespace: ns{ns}}}\nspec:\n  endpoints:\n")
        for i, name in enumerate(names):
            if i % 50 == ns:
                m.write(f"  - {{dnsName: {name}, recordType: A, recordTTL: 30, targets: [{addr(i)}, {addr(i + 7)}]}}\n")
# Traffic policies: the same names; half of them (even i) as ten
# clusters under Weighted (i % 8 == 0), Nearest (i % 8 == 2), Weighted
# sticky per client subnet (i % 8 == 4) or All with maxAnswers 2
# (i % 8 == 6); the baseline has the same names and addresses with no
# policy (every address in every answer).
regions = ["eu-west-1", "us-west-2", "ap-south-1"]
for variant in ("policy", "plain"):
    with open(f"{work}/manifests-{variant}.yaml", "w") as m:
        m.write("apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: Domain\nmetadata: {name: myfed, namespace: fedns-system}\n")
        m.write("spec:\n  domain: example.com\n  nameServers: [ns1.example.com]\n  soa: {ttl: 30, minimum: 30}\n")
        m.write("  clientRegions: [{cidr: 192.0.2.0/24, region: eu-west-1}, {cidr: 198.51.100.0/24, region: us-west-2}, {cidr: 127.0.0.0/8, region: ap-south-1}]\n")
        for ns in range(50):
            m.write(f"---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: bench, namespace: ns{ns}}}\nspec:\n  endpoints:\n")
            for i, name in enumerate(names):
                if i % 50 != ns:
                    continue
                if i % 2 == 1:
                    m.write(f"  - {{dnsName: {name}, recordType: A, recordTTL: 30, targets: [{addr(i)}, {addr(i + 7)}]}}\n")
                    continue
                offsets = [7 * c for c in range(10)]
                if variant == "plain" or i % 8 == 6:
                    limit = ", providerSpecific: [{name: fedns/max-answers, value: '2'}]" if variant == "policy" else ""
                    targets = ", ".join(addr(i + o) for o in offsets)
                    m.write(f"  - {{dnsName: {name}, recordType: A, recordTTL: 30, targets: [{targets}]{limit}}}\n")
                    continue
                for c, offset in enumerate(offsets):
                    if i % 8 in (0, 4):
                        sticky = ", {name: fedns/sticky-client-subnet, value: '24,56'}" if i % 8 == 4 else ""
                        m.write(f"  - {{dnsName: {name}, recordType: A, recordTTL: 30, targets: [{addr(i + offset)}], setIdentifier: c{c}, providerSpecific: [{{name: aws/weight, value: '{c + 1}'}}{sticky}]}}\n")
                    else:
                        m.write(f"  - {{dnsName: {name}, recordType: A, recordTTL: 30, targets: [{addr(i + offset)}], setIdentifier: c{c}, providerSpecific: [{{name: fedns/nearest-region, value: {regions[c % 3]}}}]}}\n")
with open(f"{work}/queries.txt", "w") as q:
    for _ in range(200000):
        if random.random() < 0.1:
            q.write(f"missing{random.randrange(10**6)}.ns1.myfed.svc.example.com A\n")
        else:
            q.write(f"{random.choice(names)} A\n")
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# cpu_ticks PID -> user + system clock ticks of PID and its descendants
# (every thread of each; NSD answers from child processes).
cpu_ticks() {
  local total=0 p
  for p in $1 $(pgrep -P "$1" 2>/dev/null || true); do
    if [ "$p" != "$1" ]; then total=$((total + $(cpu_ticks "$p"))); continue; fi
    # Fields after the command name, which may hold spaces ("nsd: main").
    total=$((total + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0)))
  done
  echo "$total"
}
# peak_rss_kib PID -> peak resident set of PID and its descendants, summed.
peak_rss_kib() {
  local total=0 p
  for p in $1 $(pgrep -P "$1" 2>/dev/null || true); do
    total=$((total + $(awk '/VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
wait_ready() {
  for _ in $(seq 100); do
    dig +short +time=1 +tries=1 -p "$1" @127.0.0.1 svc1.ns1.myfed.svc.example.com A >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "server on port $1 did not answer"; exit 1
}

# cpu_per_query PID TICKS_BEFORE ANSWERED -> server CPU microseconds per answered query
cpu_per_query() {
  python3 -c "print(round(($(cpu_ticks "$1") - $2) / $(getconf CLK_TCK) * 1e6 / max($3, 1), 2))"
}

# run_phase NAME PID PORT -> sets QPS AVG_MS CPU_US P50_US P99_US RSS_KIB TCP_QPS TCP_CPU_US
run_phase() {
  local name=$1 pid=$2 port=$3 ticks_before ticks_after hz answered
  hz=$(getconf CLK_TCK)
  ticks_before=$(cpu_ticks "$pid")
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$DURATION" -c 4 -q 500 \
    > "$WORK/$name-sat.txt" 2>&1
  ticks_after=$(cpu_ticks "$pid")
  QPS=$(awk '/Queries per second/ {print $4}' "$WORK/$name-sat.txt")
  AVG_MS=$(awk '/Average Latency/ {print $4 * 1000}' "$WORK/$name-sat.txt")
  answered=$(awk '/Queries completed/ {print $3}' "$WORK/$name-sat.txt")
  CPU_US=$(python3 -c "print(round(($ticks_after - $ticks_before) / $hz * 1e6 / max($answered, 1), 2))")
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$LATENCY_DURATION" -Q 10000 -v \
    > "$WORK/$name-lat.txt" 2>&1
  read -r P50_US P99_US < <(python3 - "$WORK/$name-lat.txt" <<'PY'
import sys
lat = []
for line in open(sys.argv[1]):
    parts = line.split()
    if line.startswith(">") and len(parts) >= 5:
        try: lat.append(float(parts[-1]))
        except ValueError: pass
lat.sort()
pick = lambda p: round(lat[min(len(lat) - 1, int(len(lat) * p))] * 1e6, 1) if lat else float("nan")
print(pick(0.50), pick(0.99))
PY
)
  local tcp_before tcp_answered
  tcp_before=$(cpu_ticks "$pid")
  taskset -c 1 dnsperf -m tcp -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$TCP_DURATION" -c 4 -q 500 \
    > "$WORK/$name-tcp.txt" 2>&1
  tcp_answered=$(awk '/Queries completed/ {print $3}' "$WORK/$name-tcp.txt")
  TCP_CPU_US=$(cpu_per_query "$pid" "$tcp_before" "${tcp_answered:-0}")
  TCP_QPS=$(awk '/Queries per second/ {print $4}' "$WORK/$name-tcp.txt")
  RSS_KIB=$(peak_rss_kib "$pid")
}

# policy_phase NAME MANIFESTS -> sets POLICY_QPS and POLICY_CPU_US:
# saturation with two dnsperf clients at once (half the load with ECS
# 192.0.2.0/24), and the server's CPU time per answered query.
policy_phase() {
  local name=$1 manifests=$2 port pid ticks_before answered
  port=$(free_port)
  RUST_LOG=warn taskset -c 0 "$FEDNS" dns-server --manifests "$manifests" \
    --listen "127.0.0.1:$port" --udp-workers 1 --rrl-rate "${RRL_RATE:-1000000}" --rrl-slip 2 & pid=$!
  wait_ready "$port"
  ticks_before=$(cpu_ticks "$pid")
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$DURATION" -c 2 -q 250 \
    -E 8:00011800c00002 > "$WORK/$name-ecs.txt" 2>&1 &
  local ecs=$!
  taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$DURATION" -c 2 -q 250 -e \
    > "$WORK/$name-plain.txt" 2>&1
  wait "$ecs"
  POLICY_QPS=$(awk '/Queries per second/ {s += $4} END {print s}' "$WORK/$name-ecs.txt" "$WORK/$name-plain.txt")
  answered=$(awk '/Queries completed/ {s += $3} END {print s}' "$WORK/$name-ecs.txt" "$WORK/$name-plain.txt")
  POLICY_CPU_US=$(cpu_per_query "$pid" "$ticks_before" "$answered")
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

# start_knot WORKERS CPUS -> sets PID and PORT: Knot with WORKERS UDP
# workers pinned to CPUS (a taskset list).
start_knot() {
  PORT=$(free_port)
  mkdir -p "$WORK/knot-$1"
  cat > "$WORK/knot-$1/knot.conf" <<CONF
server:
  listen: 127.0.0.1@$PORT
  rundir: $WORK/knot-$1
  udp-workers: $1
  tcp-workers: 1
  background-workers: 1
control:
  listen: $WORK/knot-$1/knot.sock
database:
  storage: $WORK/knot-$1
log:
  - target: stderr
    any: error
template:
  - id: default
    storage: $WORK/knot-$1
    semantic-checks: off
    journal-content: none
zone:
  - domain: example.com
    file: $WORK/example.com.zone
CONF
  taskset -c "$2" "$KNOTD" -c "$WORK/knot-$1/knot.conf" & PID=$!
  wait_ready "$PORT"
}

# start_nsd WORKERS CPUS -> sets PID and PORT: NSD with WORKERS server
# processes (SO_REUSEPORT sockets) pinned to CPUS, in the foreground (-d),
# not as a user of its own, without a database file, no rate limiting.
start_nsd() {
  PORT=$(free_port)
  local dir="$WORK/nsd-$1"
  mkdir -p "$dir"
  cat > "$dir/nsd.conf" <<CONF
server:
  ip-address: 127.0.0.1@$PORT
  server-count: $1
  reuseport: yes
  username: ""
  chroot: ""
  zonesdir: "$dir"
  pidfile: "$dir/nsd.pid"
  xfrdfile: "$dir/xfrd.state"
  xfrdir: "$dir"
  zonelistfile: "$dir/zone.list"
  database: ""
  logfile: "$dir/nsd.log"
  verbosity: 0
  # Debian builds NSD with response rate limiting on at 200 q/s per
  # client prefix: off, as Knot's is by default (fedns's runs at a rate
  # the one client never reaches).
  rrl-ratelimit: 0
remote-control:
  control-enable: no
zone:
  name: example.com
  zonefile: $WORK/example.com.zone
CONF
  taskset -c "$2" "$NSD" -d -c "$dir/nsd.conf" & PID=$!
  wait_ready "$PORT"
}

# start_fedns WORKERS CPUS -> sets PID and PORT (and MPORT, its metrics):
# fedns dns-server on the bench's manifests. Response rate limiting on, as
# deployed, at a rate this benchmark's one client prefix never reaches
# (RRL_RATE): every response is counted in the limiter and none is held
# back (checked after the base run).
start_fedns() {
  PORT=$(free_port)
  MPORT=$(free_port)
  RUST_LOG=warn taskset -c "$2" "$FEDNS" dns-server --manifests "$WORK/manifests.yaml" \
    --listen "127.0.0.1:$PORT" --udp-workers "$1" --metrics-addr "127.0.0.1:$MPORT" \
    --rrl-rate "${RRL_RATE:-1000000}" --rrl-slip 2 & PID=$!
  wait_ready "$PORT"
}

stop_server() { kill "$1"; wait "$1" 2>/dev/null || true; }

if [ "${ONLY_DNSSEC:-0}" = 1 ]; then
  DNSSEC=1 POLICIES=0 SCALING=0
fi
if [ "${ONLY_POLICIES:-0}" = 1 ] || [ "${ONLY_DNSSEC:-0}" = 1 ]; then
  [ "${ONLY_POLICIES:-0}" = 1 ] && POLICIES=1
else
echo "== Knot DNS ($("$KNOTD" --version | head -1))"
start_knot 1 0
run_phase knot "$PID" "$PORT"
K=("$QPS" "$AVG_MS" "$CPU_US" "$P50_US" "$P99_US" "$RSS_KIB" "$TCP_QPS" "$TCP_CPU_US")
stop_server "$PID"

echo "== NSD ($("$NSD" -v 2>&1 | head -1))"
start_nsd 1 0
run_phase nsd "$PID" "$PORT"
N=("$QPS" "$AVG_MS" "$CPU_US" "$P50_US" "$P99_US" "$RSS_KIB" "$TCP_QPS" "$TCP_CPU_US")
stop_server "$PID"

echo "== fedns dns-server"
start_fedns 1 0
run_phase fedns "$PID" "$PORT"
LIMITED=$(python3 -c "import urllib.request; print(sum(float(l.split()[-1]) for l in urllib.request.urlopen('http://127.0.0.1:$MPORT/metrics').read().decode().splitlines() if l.startswith('fedns_dns_rrl_limited')))")
echo "fedns: --rrl-rate ${RRL_RATE:-1000000} (0: off); responses held back: $LIMITED"
F=("$QPS" "$AVG_MS" "$CPU_US" "$P50_US" "$P99_US" "$RSS_KIB" "$TCP_QPS" "$TCP_CPU_US")
stop_server "$PID"

printf '\n%-8s %12s %10s %12s %9s %9s %10s %12s %12s\n' server "queries/s" "avg ms" "CPU us/q" "p50 us" "p99 us" "RSS MiB" "TCP q/s" "TCP us/q"
for row in knot nsd fedns; do
  case $row in knot) R=("${K[@]}") ;; nsd) R=("${N[@]}") ;; fedns) R=("${F[@]}") ;; esac
  printf '%-8s %12s %10s %12s %9s %9s %10.1f %12s %12s\n' "$row" "${R[0]}" "${R[1]}" "${R[2]}" "${R[3]}" "${R[4]}" "$(echo "${R[5]} / 1024" | bc -l)" "${R[6]}" "${R[7]}"
done
python3 - "${F[0]}" "${F[2]}" "${F[4]}" "${F[6]:-0}" "${F[7]:-0}" "${K[0]}" "${K[2]}" "${K[6]:-0}" "${K[7]:-0}" "${N[0]}" "${N[2]}" "${N[6]:-0}" "${N[7]:-0}" <<'PY'
import sys
fq, fc, fp99, ftq, ftc, kq, kc, ktq, ktc, nq, nc, ntq, ntc = map(float, sys.argv[1:])
print(f"\nanswers per second per core of server CPU: fedns {1e6 / fc:,.0f}, Knot {1e6 / kc:,.0f}, NSD {1e6 / nc:,.0f}")
print(f"ratio fedns/Knot: queries/s {fq / kq:.2f} (target >= 1.3), answers per core {kc / fc:.2f} (target >= 1.5)")
print(f"ratio fedns/NSD: queries/s {fq / nq:.2f}, answers per core {nc / fc:.2f}")
print(f"fedns p99 at 10k q/s: {fp99:.0f} us (target < 1000 us)")
for peer, tq, tc in (("Knot", ktq, ktc), ("NSD", ntq, ntc)):
    if ftq > 0 and tq > 0 and ftc > 0 and tc > 0:
        print(f"TCP ratio fedns/{peer}: queries/s {ftq / tq:.2f}, answers per core {tc / ftc:.2f}")
    else:
        print(f"TCP fedns/{peer}: no figures (see the dnsperf output under KEEP=1)")
PY
fi

if [ "${SCALING:-1}" = 1 ] && [ "${ONLY_POLICIES:-0}" != 1 ] && [ "${ONLY_DNSSEC:-0}" != 1 ]; then
  CPUS=$(nproc)
  COUNTS=(1 2)
  [ "$CPUS" -gt 3 ] && COUNTS+=("$((CPUS - 1))")
  echo
  echo "== scaling across cores: UDP saturation, ${SCALE_DURATION} s per run, workers ${COUNTS[*]} on a $CPUS-CPU machine"
  SCALE_ROWS=()
  for workers in "${COUNTS[@]}"; do
    cpus="0-$((workers - 1))"
    if [ "$workers" -lt "$CPUS" ]; then
      client_cpus="$workers"
    else
      client_cpus="0-$((CPUS - 1))"
      echo "(with $workers workers dnsperf shares the servers' CPUs: queries/s understate the scaling)"
    fi
    for server in knot nsd fedns; do
      "start_$server" "$workers" "$cpus"
      before=$(cpu_ticks "$PID")
      taskset -c "$client_cpus" dnsperf -s 127.0.0.1 -p "$PORT" -d "$WORK/queries.txt" -l "$SCALE_DURATION" \
        -c $((4 * workers)) -q $((500 * workers)) -T "$workers" > "$WORK/scale-$server-$workers.txt" 2>&1
      qps=$(awk '/Queries per second/ {print $4}' "$WORK/scale-$server-$workers.txt")
      answered=$(awk '/Queries completed/ {print $3}' "$WORK/scale-$server-$workers.txt")
      us=$(cpu_per_query "$PID" "$before" "${answered:-0}")
      stop_server "$PID"
      SCALE_ROWS+=("$server,$workers,${qps:-0},$us")
    done
  done
  python3 - "${SCALE_ROWS[@]}" <<'PY'
import sys
rows = [r.split(",") for r in sys.argv[1:]]
figures = {(s, int(w)): (float(q), float(u)) for s, w, q, u in rows}
servers = ["knot", "nsd", "fedns"]
counts = sorted({w for _, w in figures})
print(f"\n{'server':8} {'workers':>7} {'queries/s':>12} {'answers/core':>13} {'q/s scaling':>12}")
for s in servers:
    for w in counts:
        q, u = figures[(s, w)]
        base = figures[(s, 1)][0]
        print(f"{s:8} {w:>7} {q:>12,.0f} {1e6 / max(u, 1e-9):>13,.0f} {q / base if base else 0:>12.2f}")
for w in counts:
    fq, fu = figures[("fedns", w)]
    for peer in ("knot", "nsd"):
        pq, pu = figures[(peer, w)]
        print(f"{w} worker(s): fedns/{peer}: queries/s {fq / pq if pq else 0:.2f}, answers per core {pu / fu if fu else 0:.2f}")
PY
fi

if [ "${POLICIES:-1}" = 1 ]; then
  echo
  echo "== traffic policies: half the names Weighted/Nearest/sticky Weighted/maxAnswers 2 over 10 clusters, ECS on half the queries"
  # Rates drift by tens of percent within minutes on shared machines: run
  # the two variants alternately REPEAT times and compare each pair.
  PAIRS=()
  for round in $(seq "${REPEAT:-3}"); do
    policy_phase "plain-$round" "$WORK/manifests-plain.yaml"
    plain=("$POLICY_QPS" "$POLICY_CPU_US")
    policy_phase "policy-$round" "$WORK/manifests-policy.yaml"
    echo "round $round: without policies ${plain[0]} q/s ${plain[1]} us/q, with policies $POLICY_QPS q/s $POLICY_CPU_US us/q"
    PAIRS+=("${plain[0]},${plain[1]},$POLICY_QPS,$POLICY_CPU_US")
  done
  python3 - "${PAIRS[@]}" <<'PY'
import statistics, sys
pairs = [tuple(map(float, p.split(","))) for p in sys.argv[1:]]
qps = [b / a for a, _, b, _ in pairs]
cpu = [ca / cb for _, ca, _, cb in pairs]
print(f"ratio with/without policies, queries/s per round: {', '.join(f'{r:.3f}' for r in qps)}; median {statistics.median(qps):.3f} (target >= 0.9)")
print(f"ratio with/without policies, answers per core of server CPU: {', '.join(f'{r:.3f}' for r in cpu)}; median {statistics.median(cpu):.3f}")
PY
fi

# do_saturation PID PORT NAME -> sets DO_QPS DO_CPU_US: UDP saturation
# with DO on every query (dnsperf -D), $DURATION s.
do_saturation() {
  local pid=$1 port=$2 name=$3 before answered
  before=$(cpu_ticks "$pid")
  taskset -c 1 dnsperf -D -s 127.0.0.1 -p "$port" -d "$WORK/queries.txt" -l "$DURATION" -c 4 -q 500 \
    > "$WORK/$name-do.txt" 2>&1
  DO_QPS=$(awk '/Queries per second/ {print $4}' "$WORK/$name-do.txt")
  answered=$(awk '/Queries completed/ {print $3}' "$WORK/$name-do.txt")
  DO_CPU_US=$(cpu_per_query "$pid" "$before" "${answered:-0}")
}

# start_fedns_on MANIFESTS -> sets PID and PORT: one worker on CPU 0, keys
# (when the Domain signs) under $WORK/keys.
start_fedns_on() {
  PORT=$(free_port)
  RUST_LOG=warn taskset -c 0 "$FEDNS" dns-server --manifests "$1" --listen "127.0.0.1:$PORT" --udp-workers 1 \
    --rrl-rate "${RRL_RATE:-1000000}" --rrl-slip 2 --dnssec-key-dir "$WORK/keys" & PID=$!
  wait_ready "$PORT"
}

if [ "${DNSSEC:-1}" = 1 ]; then
  echo
  echo "== DNSSEC: signed (ECDSAP256SHA256 CSK; compact denial, NSEC chain) against unsigned, DO on every query"
  mkdir -p "$WORK/keys"
  sed 's/^spec: {domain: example.com, /spec: {dnssec: {enabled: true}, domain: example.com, /' \
    "$WORK/manifests.yaml" > "$WORK/manifests-signed.yaml"
  sed 's/^spec: {domain: example.com, /spec: {dnssec: {enabled: true, denial: NSEC}, domain: example.com, /' \
    "$WORK/manifests.yaml" > "$WORK/manifests-signed-nsec.yaml"
  grep -q 'dnssec: {enabled: true}' "$WORK/manifests-signed.yaml" || { echo "could not make the signed manifests"; exit 1; }
  grep -q 'denial: NSEC' "$WORK/manifests-signed-nsec.yaml" || { echo "could not make the NSEC manifests"; exit 1; }
  # Knot DNS signing the same zone (dnssec-signing: on, NSEC), once per
  # round beside fedns; its keys and signed zone stay in its storage.
  KPORT=$(free_port)
  mkdir -p "$WORK/knot-signed"
  cp "$WORK/example.com.zone" "$WORK/knot-signed/example.com.zone"
  cat > "$WORK/knot-signed/knot.conf" <<CONF
server:
  listen: 127.0.0.1@$KPORT
  rundir: $WORK/knot-signed
  udp-workers: 1
  tcp-workers: 1
  background-workers: 1
control:
  listen: $WORK/knot-signed/knot.sock
database:
  storage: $WORK/knot-signed
log:
  - target: stderr
    any: error
policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
template:
  - id: default
    storage: $WORK/knot-signed
    semantic-checks: off
zone:
  - domain: example.com
    file: $WORK/knot-signed/example.com.zone
    zonefile-sync: -1
    journal-content: none
    dnssec-signing: on
    dnssec-policy: bench
CONF
  knot_signed_round() {
    taskset -c 0 "$KNOTD" -c "$WORK/knot-signed/knot.conf" & PID=$!
    wait_ready "$KPORT"
    for _ in $(seq 100); do
      dig +dnssec +time=1 +tries=1 -p "$KPORT" @127.0.0.1 svc1.ns1.myfed.svc.example.com A | grep -q RRSIG && break
      sleep 0.2
    done
    do_saturation "$PID" "$KPORT" "knot-signed-$1"
    stop_server "$PID"
  }
  DNSSEC_PAIRS=()
  NSEC_PAIRS=()
  KNOT_ROWS=()
  for round in $(seq "${REPEAT:-3}"); do
    start_fedns_on "$WORK/manifests.yaml"
    do_saturation "$PID" "$PORT" "unsigned-$round"
    stop_server "$PID"
    unsigned=("$DO_QPS" "$DO_CPU_US")
    start_fedns_on "$WORK/manifests-signed.yaml"
    # The answers are signed: an RRSIG comes with a positive answer.
    dig +dnssec +time=1 +tries=1 -p "$PORT" @127.0.0.1 svc1.ns1.myfed.svc.example.com A | grep -q RRSIG \
      || { echo "fedns did not sign"; exit 1; }
    do_saturation "$PID" "$PORT" "signed-$round"
    stop_server "$PID"
    compact=("$DO_QPS" "$DO_CPU_US")
    start_fedns_on "$WORK/manifests-signed-nsec.yaml"
    # A missing name is denied by chain links (NXDOMAIN, no \000 next name).
    dig +dnssec +time=1 +tries=1 -p "$PORT" @127.0.0.1 missing1.ns1.myfed.svc.example.com A \
      | grep -q 'status: NXDOMAIN' || { echo "fedns did not deny by NSEC chain"; exit 1; }
    do_saturation "$PID" "$PORT" "signed-nsec-$round"
    stop_server "$PID"
    echo "round $round: unsigned ${unsigned[0]} q/s ${unsigned[1]} us/q, signed (compact denial) ${compact[0]} q/s" \
      "${compact[1]} us/q, signed (NSEC chain) $DO_QPS q/s $DO_CPU_US us/q"
    DNSSEC_PAIRS+=("${unsigned[0]},${unsigned[1]},${compact[0]},${compact[1]}")
    NSEC_PAIRS+=("${unsigned[0]},${unsigned[1]},$DO_QPS,$DO_CPU_US")
    nsec=("$DO_QPS" "$DO_CPU_US")
    knot_signed_round "$round"
    echo "round $round: Knot signed (NSEC) $DO_QPS q/s $DO_CPU_US us/q"
    KNOT_ROWS+=("${compact[0]},${compact[1]},${nsec[0]},${nsec[1]},$DO_QPS,$DO_CPU_US")
  done

  BUILD_NAMES=${BUILD_NAMES:-100000}
  echo "== snapshot build: $BUILD_NAMES names, unsigned and signed (time to the first answer, peak RSS)"
  python3 - "$WORK" "$BUILD_NAMES" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
for variant in ("unsigned", "signed", "signed-nsec"):
    with open(f"{work}/build-{variant}.yaml", "w") as m:
        m.write("apiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: Domain\nmetadata: {name: myfed, namespace: fedns-system}\n")
        dnssec = {"unsigned": "", "signed": "dnssec: {enabled: true}, ", "signed-nsec": "dnssec: {enabled: true, denial: NSEC}, "}[variant]
        m.write(f"spec: {{{dnssec}domain: example.com, nameServers: [ns1.example.com], soa: {{ttl: 30, minimum: 30}}}}\n")
        for ns in range(50):
            m.write(f"---\napiVersion: multiclusterdns.fedns.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: bench, namespace: ns{ns}}}\nspec:\n  endpoints:\n")
            for i in range(ns, n, 50):
                m.write(f"  - {{dnsName: svc{i}.ns{ns}.myfed.svc.example.com, recordType: A, recordTTL: 30, targets: [10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}]}}\n")
PY
  BUILD_ROWS=()
  for variant in unsigned signed signed-nsec; do
    start=$(date +%s.%N)
    PORT=$(free_port)
    RUST_LOG=warn taskset -c 0 "$FEDNS" dns-server --manifests "$WORK/build-$variant.yaml" --listen "127.0.0.1:$PORT" \
      --udp-workers 1 --dnssec-key-dir "$WORK/keys" & PID=$!
    until dig +short +time=1 +tries=1 -p "$PORT" @127.0.0.1 svc1.ns1.myfed.svc.example.com A 2>/dev/null | grep -q .; do
      sleep 0.1
    done
    ready=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
    rss=$(peak_rss_kib "$PID")
    stop_server "$PID"
    BUILD_ROWS+=("$variant,$ready,$rss")
  done
  python3 - "${DNSSEC_PAIRS[@]}" -- "${NSEC_PAIRS[@]}" -- "${KNOT_ROWS[@]}" -- "${BUILD_ROWS[@]}" <<'PY'
import statistics, sys
args = sys.argv[1:]
sep = args.index("--")
sep2 = args.index("--", sep + 1)
sep3 = args.index("--", sep2 + 1)
for label, rows in (("compact denial", args[:sep]), ("NSEC chain", args[sep + 1:sep2])):
    pairs = [tuple(map(float, p.split(","))) for p in rows]
    qps = [s / u for u, _, s, _ in pairs]
    cpu = [uc / sc for _, uc, _, sc in pairs]
    print(f"\nsigned ({label})/unsigned (DO on every query), queries/s per round: {', '.join(f'{r:.3f}' for r in qps)}; median {statistics.median(qps):.3f} (target >= 0.9)")
    print(f"signed ({label})/unsigned, answers per core of server CPU: {', '.join(f'{r:.3f}' for r in cpu)}; median {statistics.median(cpu):.3f} (target >= 0.9)")
knot = [tuple(map(float, r.split(","))) for r in args[sep2 + 1:sep3]]
for label, q, c in (("compact denial", 0, 1), ("NSEC chain", 2, 3)):
    qps = [r[q] / r[4] if r[4] else 0 for r in knot]
    cpu = [r[5] / r[c] if r[c] else 0 for r in knot]
    print(f"\nfedns signed ({label}) / Knot signed (NSEC), queries/s per round: {', '.join(f'{x:.3f}' for x in qps)}; median {statistics.median(qps):.3f} (target >= 1.0)")
    print(f"fedns signed ({label}) / Knot signed (NSEC), answers per core: {', '.join(f'{x:.3f}' for x in cpu)}; median {statistics.median(cpu):.3f} (target >= 1.0)")
for row in args[sep3 + 1:]:
    variant, ready, rss = row.split(",")
    print(f"{variant:>11}: first answer after {ready} s (manifests read, snapshot built), peak RSS {int(rss) / 1024:.0f} MiB")
PY
fi
