#!/bin/bash
# Upload latency through `kvd serve` with store.sync_writes on and off: PAIRS pairs of server
# runs, one of each setting per pair (the order alternates from pair to pair), each on a fresh
# data directory; each run uploads UPLOADS documents one after the other (POST /v1/documents,
# answered 201 once stored) and times each request with curl. Prints one markdown row per
# setting: the median over runs of each run's median, and the 90th percentile of all uploads.
#
# Usage: bench/serve/upload_sync.sh [PAIRS] [UPLOADS] [METHOD] [OUT_DIR]
#   from the repository root; KVD (default build/kvd), PORT (18150). METHOD is the uploads'
#   compression (default none: the least model work, so the store's share shows most).
# Example (docs/benchmarks.md):
#   bench/serve/upload_sync.sh 5 20 none /tmp/kvd_upload_sync
set -euo pipefail
PAIRS=${1:-5}
UPLOADS=${2:-20}
METHOD=${3:-none}
OUT=${4:-/tmp/kvd_upload_sync}
KVD=${KVD:-build/kvd}
PORT=${PORT:-18150}

rm -rf "$OUT"
mkdir -p "$OUT"
SERVER=
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null && wait $SERVER || true' EXIT

# A document of about 600 bytes: key-value records between filler sentences, different per
# upload.
document() {
  local text="" i
  for i in $(seq 12); do
    text+="the river crosses the bridge near lamp $1-$i.\\nkey$i: VALUE$1X$i\\n"
  done
  printf '{"text": "%s", "compression": {"method": "%s"}}' "$text" "$METHOD"
}

run() {  # run SETTING PAIR
  local dir="$OUT/$1-$2"
  mkdir -p "$dir"
  printf 'store:\n  sync_writes: %s\ndocuments:\n  upload_wait_seconds: 60\n' "$1" > "$dir/config.yaml"
  "$KVD" serve --model models/kvd-tiny --config "$dir/config.yaml" --host 127.0.0.1 \
    --port "$PORT" --data-dir "$dir/data" > "$dir/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do
    grep -q "serving .* on http://" "$dir/server.log" && break
    sleep 0.2
  done
  for i in $(seq "$UPLOADS"); do
    document "$2-$i" > "$dir/body.json"
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
      --data-binary @"$dir/body.json" "http://127.0.0.1:$PORT/v1/documents" >> "$dir/times"
  done
  kill "$SERVER" && wait "$SERVER" || true
  SERVER=
  if grep -qv '^201 ' "$dir/times"; then
    echo "an upload was not answered 201 (see $dir/times)" >&2
    exit 1
  fi
}

for pair in $(seq "$PAIRS"); do
  order="true false"
  [ $((pair % 2)) = 0 ] && order="false true"
  for setting in $order; do run "$setting" "$pair"; done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| sync_writes | upload ms (median of run medians) | upload ms (p90, all) |"
echo "|---|---:|---:|"
for setting in true false; do
  medians=$(for times in "$OUT/$setting"-*/times; do
    awk '{print $2 * 1000}' "$times" | median
  done | median)
  p90=$(cat "$OUT/$setting"-*/times | awk '{print $2 * 1000}' | sort -g |
    awk '{v[NR] = $1} END {print v[int(0.9 * (NR - 1)) + 1]}')
  printf '| %s | %.2f | %.2f |\n' "$setting" "$medians" "$p90"
done
