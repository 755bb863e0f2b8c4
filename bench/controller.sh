#!/usr/bin/env bash
# Controller benchmark: change-to-answer latency (p50/p99 over 100 load
# balancer changes), failover time, and the 20 × 2,000 scale run (cold-start
# convergence and peak RSS). Figures are printed; nothing is asserted.
# Env: MEMBERS (20), SERVICES (2000), CHANGES (100), SCALE_CHANGES (20),
# PARTS (latency,scale; `routes`: MEMBERS (50) × ROUTES (2000) HTTPRoutes beside
# as many Services, ROUTE_CHANGES (10) Gateway address changes),
# WRAP (a profiler command line before the controller), FEDNS_ARGS (more
# controller flags, e.g. `--workers 32`),
# DOMAIN_EDIT and RESTART (1; 0 skips the Domain edit or the controller restart:
# with both 0 a heap profile ends in the steady state), REFERENCE=0 (no
# 2,000-shard reference run), PEER=0 (no Services run beside the routes),
# FEDNS_OLD (an older fedns binary: each part runs with it first, then
# with this build's, and prints both figures with the ratio new/old),
# SNAPSHOT=0 (the restart without --snapshot-file).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --workspace --bench federation
