#!/usr/bin/env bash
# The main job: installs what is missing, builds leasewheel optimised and
# runs lwbench, the sizing tool, against a private redis-server it starts
# on a free loopback port (and stops).  With no options it holds 200000
# watchdog locks on a 30 s lease for 30 s and prints the table: about a
# minute on a 2-core machine.  Options go to lwbench (lwbench --help), e.g.
#   scripts/bench.sh --locks 1000000 --duration-s 60
#   scripts/bench.sh --sweep --lease-ms 3000 --tick-ms 10 --plot sweep.png
#   scripts/bench.sh --cluster    # a private Redis Cluster instead: 3 masters,
#                                 # 3 replicas on loopback, stopped afterwards
#   scripts/bench.sh --cluster 10.0.0.1:7000,10.0.0.2:7000   # a given cluster
#   scripts/bench.sh --tls        # over TLS: the private redis-server (or with
#                                 # --cluster, cluster) serves TLS only, with a
#                                 # throwaway CA made with openssl for the run
#   scripts/bench.sh --tls -r rediss://redis.internal:6380 --cacert ca.pem
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
lw_build_release
exec build/release/bench/lwbench "$@"
