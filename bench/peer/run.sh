#!/usr/bin/env bash
# kvd beside llama.cpp on this machine: the same weights, the same threads, interleaved rounds
# (odd rounds kvd first, even rounds llama.cpp first), so that a noisy host slows both alike.
# It takes a llama.cpp build and GGUF files of the weights kvd loads; it builds nothing.
#
#   bench/peer/run.sh --llama-bin DIR --model DIR --bf16 GGUF --q8_0 GGUF --q4_k_m GGUF
#                     [--kvd build/kvd] [--rounds 3] [--threads 2] [--out DIR]
#                     [--contexts 4096,16384] [--only b1,b16,prefill,context]
#   bench/peer/run.sh --summarize DIR
#
# Per round:
#   batch-1 decode (32 steps after a 128-token prompt): kvd bf16 / int8 / int4 against llama.cpp
#     bf16 / Q8_0 / Q4_K_M (llama-bench tg32 @ d128), each kvd run with the share of its weights'
#     bytes a step against the read and STREAM-triad bandwidth it measured itself;
#   16 sequences of 128-token prompts, 32 steps: kvd bf16 / int8 against llama-batched-bench's
#     bf16 / Q8_0;
#   a 512-token prompt's prefill in bf16 (llama-bench pp512);
#   with --contexts, batch-1 decode after that many tokens in bf16, kvd's KV cache in f32 and in
#     bf16 against llama-bench -d N with flash attention on (its KV cache in f16), and the
#     prefill of a prompt that long (kvd's run of the same prompt against llama-bench -p N).
# Then --summarize: each figure's value in every round, the medians and kvd / llama.cpp, as a
# markdown table, with the machine's CPU line (kvd info) and the bandwidths kvd measured.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# Medians per figure from OUT's files, as a markdown table.
summarize() {
  local out=$1
  [[ -d "$out" ]] || { echo "no such directory: $out" >&2; exit 2; }
  if [[ -f "$out/cpu.txt" ]]; then echo "machine: $(cat "$out/cpu.txt")"; fi
  if [[ -f "$out/setup.txt" ]]; then cat "$out/setup.txt"; fi
  # The llama.cpp build its own JSON lines name.
  local commit
  commit=$(cat "$out"/r*.llama.*.txt 2>/dev/null | grep -o '"build_commit": *"[^"]*"' | head -1 |
    sed 's/.*"\([^"]*\)"$/\1/' || true)
  if [[ -n "$commit" ]]; then echo "llama.cpp build: $commit"; fi
  "$here/figures.sh" "$out" | awk -f "$here/summarize.awk"
}

llama_bin='' model='' bf16='' q8='' q4='' kvd=build/kvd rounds=3 threads=2 out='' contexts=''
only=b1,b16,prefill,context
while (($#)); do
  (($# >= 2)) || usage
  case "$1" in
    --summarize) [[ $# -eq 2 ]] || usage; summarize "$2"; exit 0 ;;
    --llama-bin) llama_bin=$2 ;;
    --model) model=$2 ;;
    --bf16) bf16=$2 ;;
    --q8_0) q8=$2 ;;
    --q4_k_m) q4=$2 ;;
    --kvd) kvd=$2 ;;
    --rounds) rounds=$2 ;;
    --threads) threads=$2 ;;
    --out) out=$2 ;;
    --contexts) contexts=$2 ;;
    --only) only=$2 ;;
    *) usage ;;
  esac
  shift 2
done
[[ -n "$llama_bin" && -n "$model" && -n "$bf16" && -n "$q8" && -n "$q4" ]] || usage
for file in "$llama_bin/llama-bench" "$llama_bin/llama-batched-bench" "$kvd"; do
  [[ -x "$file" ]] || { echo "not an executable: $file" >&2; exit 2; }
done
for file in "$bf16" "$q8" "$q4" "$model/config.json"; do
  [[ -f "$file" ]] || { echo "no such file: $file" >&2; exit 2; }
done
out=${out:-$(mktemp -d /tmp/kvd-peer.XXXXXX)}
mkdir -p "$out"
wants() { [[ ",$only," == *",$1,"* ]]; }

"$kvd" info --model "$model" 2>/dev/null | sed -n "s/^cpu: //p" | head -1 >"$out/cpu.txt" || true
{
  echo "kvd: $kvd, $("$kvd" info 2>/dev/null | head -1)"
  echo "llama.cpp: $llama_bin"
  echo "threads $threads, rounds $rounds, contexts ${contexts:-none}"
} >"$out/setup.txt"

round=0
kvd_bench() {
  local tag=$1; shift
  "$kvd" bench --model "$model" --threads "$threads" "$@" >"$out/r$round.kvd.$tag.txt" 2>&1
}
llama() {
  local tag=$1 tool=$2; shift 2
  LD_LIBRARY_PATH="$llama_bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$llama_bin/$tool" "$@" >"$out/r$round.llama.$tag.txt" 2>&1
}
run_kvd() {
  if wants b1; then
    for dtype in bf16 int8 int4; do
      kvd_bench "b1.$dtype" --dtype "$dtype" --batch 1 --prompt-tokens 128 --decode-tokens 32
    done
  fi
  if wants prefill; then
    kvd_bench prefill.bf16 --dtype bf16 --batch 1 --prompt-tokens 512 --decode-tokens 2
  fi
  if wants b16; then
    for dtype in bf16 int8; do
      kvd_bench "b16.$dtype" --dtype "$dtype" --batch 16 --prompt-tokens 128 --decode-tokens 32
    done
  fi
  if wants context && [[ -n "$contexts" ]]; then
    for tokens in ${contexts//,/ }; do
      for kv in f32 bf16; do
        kvd_bench "context$tokens.$kv" --dtype bf16 --kv-cache-dtype "$kv" --batch 1 \
          --prompt-tokens "$tokens" --decode-tokens 32
      done
    done
  fi
}
run_llama() {
  if wants b1; then
    llama b1 llama-bench -m "$bf16,$q8,$q4" -p 0 -n 32 -d 128 -t "$threads" -r 2 -o jsonl
  fi
  if wants prefill; then
    llama prefill llama-bench -m "$bf16" -p 512 -n 0 -t "$threads" -r 2 -o jsonl
  fi
  if wants b16; then
    llama b16.bf16 llama-batched-bench -m "$bf16" -npp 128 -ntg 32 -npl 16 -t "$threads" \
      -c 2560 --output-format jsonl
    llama b16.q8_0 llama-batched-bench -m "$q8" -npp 128 -ntg 32 -npl 16 -t "$threads" \
      -c 2560 --output-format jsonl
  fi
  if wants context && [[ -n "$contexts" ]]; then
    llama context llama-bench -m "$bf16" -p 0 -n 32 -d "$contexts" -fa 1 -t "$threads" -r 2 \
      -o jsonl
    llama prompt llama-bench -m "$bf16" -p "$contexts" -n 0 -fa 1 -t "$threads" -r 1 -o jsonl
  fi
}
for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds at $(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  if ((round % 2)); then run_kvd; run_llama; else run_llama; run_kvd; fi
done
echo "results in $out" >&2
summarize "$out"
