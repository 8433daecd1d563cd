#!/bin/bash
# A question on a stored document through `kvd serve` with a shared document tier: two
# replicas, A and B, share one redis-server (started here on loopback, append-only file synced
# on every write). Each round uploads a fresh document on A, then times one question
# (max_tokens 1: the time to the first token, and the document's identity checks) on B:
#   remote  B's first question: B has no copy, so it reads the cache from Redis, checks it,
#           keeps it in its local store and memory tier, and loads it into its KV pool;
#   local   the same question on C, a third replica that holds a copy in its local store but
#           keeps none in memory (documents.memory_tier_bytes: 0);
#   memory  B again, the cache now in its memory tier;
#   prefill the same question with the document's text in the prompt, no stored document.
# Prints one markdown row per case: the median over ROUNDS and the stored cache's bytes.
#
# Usage: bench/serve/shared_tier.sh [ROUNDS] [MODEL] [SENTENCES] [OUT_DIR]
#   from the repository root; KVD (default build/kvd), KVD_FLAGS (more `kvd serve` flags, e.g.
#   "--dtype bf16 --threads 2"), PORT (18160, 18161, 18162 and 18163 for Redis). SENTENCES sets
#   the document's length (about 14 tokens each).
# Example (docs/benchmarks.md):
#   bench/serve/shared_tier.sh 7 models/kvd-tiny 60 /tmp/kvd_shared_tier
set -euo pipefail
ROUNDS=${1:-7}
MODEL=${2:-models/kvd-tiny}
SENTENCES=${3:-60}
OUT=${4:-/tmp/kvd_shared_tier}
KVD=${KVD:-build/kvd}
read -r -a FLAGS <<< "${KVD_FLAGS:-}"
PORT=${PORT:-18160}
REDIS_PORT=$((PORT + 3))

rm -rf "$OUT"
mkdir -p "$OUT/redis"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait || true' EXIT

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$OUT/redis" --save "" \
  --appendonly yes --appendfsync always --logfile "$OUT/redis/log" &
PIDS+=($!)
for _ in $(seq 100); do
  redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
  sleep 0.1
done

start() {  # start NAME PORT MEMORY_TIER_BYTES
  mkdir -p "$OUT/$1"
  printf 'store:\n  remote:\n    url: redis://127.0.0.1:%s\ndocuments:\n  upload_wait_seconds: 600\n  memory_tier_bytes: %s\n' \
    "$REDIS_PORT" "$3" > "$OUT/$1/config.yaml"
  "$KVD" serve --model "$MODEL" --config "$OUT/$1/config.yaml" --host 127.0.0.1 --port "$2" \
    --data-dir "$OUT/$1/data" "${FLAGS[@]}" > "$OUT/$1/server.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 600); do
    grep -q "serving .* on http://" "$OUT/$1/server.log" && return
    sleep 0.2
  done
  echo "replica $1 did not start (see $OUT/$1/server.log)" >&2
  exit 1
}
start a "$PORT" 536870912
start b $((PORT + 1)) 536870912
start c $((PORT + 2)) 0

document() {  # document ROUND: different text each round
  local text="" i
  for i in $(seq "$SENTENCES"); do
    text+="Ledger $1-$i: the ferry to pier $((i * 7 % 13)) leaves at $((i % 12 + 1)) o'clock. "
  done
  printf '%s' "$text"
}

question() {  # question PORT BODY_FILE: prints the seconds to the answer
  curl -s -o "$OUT/answer.json" -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
    --data-binary @"$2" "http://127.0.0.1:$1/v1/completions" | {
    read -r code seconds
    [ "$code" = 200 ] || { echo "question answered $code: $(cat "$OUT/answer.json")" >&2; exit 1; }
    echo "$seconds"
  }
}

ask=' Question: when does the ferry to pier 3 leave? Answer:'
for round in $(seq "$ROUNDS"); do
  text=$(document "$round")
  printf '{"text": "%s"}' "$text" > "$OUT/upload.json"
  curl -s -o "$OUT/document.json" -H 'Content-Type: application/json' \
    --data-binary @"$OUT/upload.json" "http://127.0.0.1:$PORT/v1/documents"
  id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$OUT/document.json")
  bytes=$(sed -n 's/.*"stored_bytes":\([0-9]*\).*/\1/p' "$OUT/document.json")
  [ -n "$id" ] || { echo "upload failed: $(cat "$OUT/document.json")" >&2; exit 1; }
  printf '{"model": "m", "documents": ["%s"], "prompt": "%s", "max_tokens": 1, "temperature": 0}' \
    "$id" "$ask" > "$OUT/question.json"
  printf '{"model": "m", "prompt": "%s%s", "max_tokens": 1, "temperature": 0}' \
    "$text" "$ask" > "$OUT/inline.json"
  sed -i "s/\"model\": \"m\"/\"model\": \"$(basename "$MODEL")\"/" "$OUT/question.json" "$OUT/inline.json"
  remote=$(question $((PORT + 1)) "$OUT/question.json")
  question $((PORT + 2)) "$OUT/question.json" > /dev/null  # C fetches its copy
  local_=$(question $((PORT + 2)) "$OUT/question.json")
  memory=$(question $((PORT + 1)) "$OUT/question.json")
  prefill=$(question $((PORT + 1)) "$OUT/inline.json")
  echo "$remote $local_ $memory $prefill $bytes" >> "$OUT/times"
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "| case | seconds (median of $ROUNDS) |"
echo "|---|---:|"
for column in 1 2 3 4; do
  name=$(echo "remote local memory prefill" | cut -d' ' -f"$column")
  echo "| $name | $(cut -d' ' -f"$column" "$OUT/times" | median) |"
done
echo "stored cache: $(cut -d' ' -f5 "$OUT/times" | median) bytes"
