#!/bin/bash
# Prefix caching on against off under multi_turn.mjs's chat workload (a long shared system
# prompt; every turn resends the conversation so far), through `kvd serve`. The two settings
# alternate for ROUNDS rounds each, a fresh server per run, so both see the same machine state.
# Prints one markdown row per run: prompt tokens sent and computed (the server's
# kvd_scheduler_computed_tokens_total, decode excluded), TTFT p50/p99, the first request's TTFT
# against the median of the later conversations' first turns, and throughput.
#
# Usage: bench/serve/prefix_cache.sh [ROUNDS] [MODEL] [OUT_DIR] [multi_turn.mjs options...]
#   from the repository root, after `npm ci` in bench/serve; KVD (default build/kvd),
#   KVD_FLAGS (more `kvd serve` flags, e.g. "--dtype bf16 --threads 2"), PORT (18170).
# Example (docs/benchmarks.md):
#   bench/serve/prefix_cache.sh 2 models/kvd-tiny /tmp/kvd_prefix_cache
set -euo pipefail
ROUNDS=${1:-2}
MODEL=${2:-models/kvd-tiny}
OUT=${3:-/tmp/kvd_prefix_cache}
shift $(($# < 3 ? $# : 3))
KVD=${KVD:-build/kvd}
read -r -a FLAGS <<< "${KVD_FLAGS:-}"
PORT=${PORT:-18170}
rm -rf "$OUT"
mkdir -p "$OUT"
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait || true' EXIT

metric() {  # metric NAME: its value on the running server
  curl -s "http://127.0.0.1:$PORT/metrics" |
    awk -v name="$1" 'index($1, name "{") == 1 || $1 == name {print $2}'
}

echo "| prefix cache | requests | prompt tokens | cached | computed (server) | TTFT p50 ms | TTFT p99 ms | first request ms | later first turns p50 ms | completion tok/s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  for enabled in true false; do
    run="$OUT/$enabled-$round"
    mkdir -p "$run"
    printf 'prefix_cache:\n  enabled: %s\n' "$enabled" > "$run/config.yaml"
    "$KVD" serve --model "$MODEL" --config "$run/config.yaml" --host 127.0.0.1 --port "$PORT" \
      --data-dir "$run/data" "${FLAGS[@]}" > "$run/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 600); do
      grep -q "serving .* on http://" "$run/server.log" && break
      sleep 0.2
    done
    before=$(metric kvd_scheduler_computed_tokens_total)
    node bench/serve/multi_turn.mjs --base-url "http://127.0.0.1:$PORT/v1" "$@" > "$run/result.json"
    after=$(metric kvd_scheduler_computed_tokens_total)
    kill "$SERVER"
    wait "$SERVER" || true
    SERVER=
    node -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1])).summary;
      // Decode computes every sampled token but the last of each request.
      const computed = Number(process.argv[2]) - Number(process.argv[3]) - r.probe_prompt_tokens -
        (r.completion_tokens - r.requests);
      const f = (x) => x.toFixed(1);
      console.log(`| ${process.argv[4]} | ${r.requests} | ${r.prompt_tokens} | ${r.cached_tokens} | ` +
        `${computed} | ${f(r.ttft_p50_ms)} | ${f(r.ttft_p99_ms)} | ${f(r.first_request_ttft_ms)} | ` +
        `${f(r.later_first_turns_ttft_p50_ms)} | ${f(r.completion_tokens_per_s)} |`);
    ' "$run/result.json" "$after" "$before" "$([ "$enabled" = true ] && echo on || echo off)"
  done
done
