#!/bin/bash
# Streaming generate over gRPC versus HTTP/SSE against one kvd, back to back: starts
# `kvd serve` with both ports, runs load.mjs once per protocol per pair (the order alternates
# from pair to pair), and samples around each run the server's CPU time (/proc/PID/stat) and
# its scheduler counters (/metrics: steps, step and forward seconds). Prints one markdown row per
# run (compare_table.mjs); the raw JSON stays in OUT_DIR.
#
# Usage: bench/serve/compare_protocols.sh [PAIRS] [OUT_DIR] -- [load.mjs options]
#   from the repository root; KVD (default build/kvd), HTTP_PORT (18140), GRPC_PORT (18141).
# Example (docs/benchmarks.md):
#   bench/serve/compare_protocols.sh 3 /tmp/protocols -- --rates inf --requests 64 \
#     --max-tokens 256 --temperature 0 --seed 1
set -euo pipefail
positional=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  positional+=("$1")
  shift
done
[ $# -gt 0 ] && shift  # the --
PAIRS=${positional[0]:-3}
OUT=${positional[1]:-/tmp/kvd_protocols}
KVD=${KVD:-build/kvd}
HTTP_PORT=${HTTP_PORT:-18140}
GRPC_PORT=${GRPC_PORT:-18141}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

rm -rf "$OUT"
mkdir -p "$OUT/data"
"$KVD" serve --model models/kvd-tiny --host 127.0.0.1 --port "$HTTP_PORT" \
  --grpc-port "$GRPC_PORT" --data-dir "$OUT/data" > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null && wait $SERVER || true' EXIT
for _ in $(seq 100); do
  grep -q "serving .* on http://" "$OUT/server.log" && break
  sleep 0.2
done

server_cpu() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }  # clock ticks
scheduler() {
  curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk '
    /^kvd_scheduler_steps_total/ {steps = $2}
    /^kvd_scheduler_step_seconds_total/ {step = $2}
    /^kvd_scheduler_forward_seconds_total/ {forward = $2}
    END {print steps, step, forward}'
}

for pair in $(seq "$PAIRS"); do
  order="grpc http"
  [ $((pair % 2)) = 0 ] && order="http grpc"
  for protocol in $order; do
    if [ "$protocol" = grpc ]; then
      target=(--protocol grpc --grpc-target "127.0.0.1:$GRPC_PORT")
    else
      target=(--base-url "http://127.0.0.1:$HTTP_PORT/v1")
    fi
    cpu0=$(server_cpu)
    read -r steps0 step0 forward0 < <(scheduler)
    node "$BENCH_DIR/load.mjs" "${target[@]}" "$@" --json > "$OUT/$protocol-$pair.json" \
      2> "$OUT/$protocol-$pair.log"
    cpu1=$(server_cpu)
    read -r steps1 step1 forward1 < <(scheduler)
    echo "$protocol $pair server_cpu_ticks=$((cpu1 - cpu0)) clk_tck=$(getconf CLK_TCK)" \
      "steps=$((steps1 - steps0)) step_s=$(echo "$step1 - $step0" | bc -l)" \
      "forward_s=$(echo "$forward1 - $forward0" | bc -l)" >> "$OUT/server.txt"
  done
done
node "$BENCH_DIR/compare_table.mjs" "$OUT"
