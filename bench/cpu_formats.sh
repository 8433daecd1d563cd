#!/usr/bin/env bash
# The CPU figures of docs/benchmarks.md's weight-format tables in one run: ROUNDS rounds, each
# running every command in turn (so that a noisy host spreads over all of them), then every
# figure's values and median. Per round: batch-1 decode of each weight format with the share of
# the memory roofline its run measured (and its 128-token prefill in tokens and GFLOP a second,
# the vector peaks the run measured, and the shares of the bandwidth read's buffer and of the
# resident memory in huge pages), the default format's 512-token prefill, 16-sequence decode
# of bf16, int8 and int4, and the bundled model at 1 and 16 sequences (twice in one process, and
# the ratio of each pair). Each run's prefill is also divided by that run's own peak of the
# format's product (f32 FMA; bf16 dot; int8 dot for int8 and int4), as a share.
#
#   bench/cpu_formats.sh [ROUNDS (3)] [MODEL_DIR (/tmp/llama1b-bf16)] [KVD (build/kvd)]
#
# MODEL_DIR is made by build/make_random_model --seed 1 (Llama 3.2 1B's shape, bf16) when it
# does not exist. THREADS (default 2) sets --threads. It measures and prints; it checks nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
model=${2:-/tmp/llama1b-bf16}
kvd=${3:-build/kvd}
threads=${THREADS:-2}
[[ -d "$model" ]] || build/make_random_model --out "$model" --seed 1 >&2

figures=$(mktemp)
trap 'rm -f "$figures"' EXIT

# The rows of `kvd bench`'s table on stdin as "batch prefill_tok_s decode_tok_s roofline_share
# prefill_gflop_s".
table_rows() {
  awk -F'|' '$2 ~ /^ *[0-9]+ *$/ {
    for (i = 2; i <= NF; ++i) gsub(/[ %]/, "", $i)
    print $2, $3, $5, $7, $9
  }'
}
# Appends the vector peaks a run measured on all its threads at once (kvd bench's "vector peak"
# line on stdin) to the figures, as "peak_<instruction>_gops VALUE".
record_peaks() {
  sed -n 's/.*vector peak on [^:]*: //p' | tr ',' '\n' |
    awk '{ printf "peak_%s_%s_gops %s\n", $1, $2, $3 }' >>"$figures"
}
# The percentage of `kvd bench`'s output on stdin that its prefill GFLOP/s ($1) is of the peak it
# measured of the product a weight format ($2) runs on: f32 FMAs, bf16 or int8 dot products where
# the CPU has them ("default": the checkpoint's format, bf16 for the model this script makes).
share_of_peak() {
  local product="f32 fma"
  case "$2" in
    bf16 | default) product="bf16 dot" ;;
    int8 | int4) product="int8 dot" ;;
  esac
  sed -n 's/.*vector peak on [^:]*: //p' | tr ',' '\n' |
    awk -v gflops="$1" -v want="$product" '
      { peaks[$1 " " $2] = $3 }
      END {
        peak = (want in peaks) ? peaks[want] : peaks["f32 fma"]
        if (gflops != "" && peak > 0) printf "%.0f\n", 100 * gflops / peak
      }'
}
# Appends "NAME VALUE" to the figures (nothing for an empty value: a figure not reported).
record() { [[ -z "$2" ]] || echo "$1 $2" >>"$figures"; }

for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds" >&2
  for dtype in f32 bf16 int8 int4; do
    out=$("$kvd" bench --model "$model" --dtype "$dtype" --batch 1 --prompt-tokens 128 \
      --decode-tokens 32 --threads "$threads" 2>/dev/null)
    read -r _ prefill decode share gflops < <(table_rows <<<"$out")
    record "decode_tok_s_batch_1_$dtype" "$decode"
    record "roofline_share_batch_1_$dtype" "$share"
    record "prefill_tok_s_128_$dtype" "$prefill"
    record "prefill_gflop_s_128_$dtype" "$gflops"
    record "prefill_share_of_peak_128_$dtype" "$(share_of_peak "$gflops" "$dtype" <<<"$out")"
    record_peaks <<<"$out"
    # How much of the bandwidth read's buffer and of the weights got huge pages: shares of the
    # roofline only compare where these are alike.
    record "read_buffer_huge_pages_$dtype" \
      "$(sed -n "s/.*the read's buffer \([0-9]*\)% in huge pages.*/\1/p" <<<"$out")"
    record "resident_huge_pages_$dtype" \
      "$(sed -n 's/^resident anonymous memory .*, \([0-9]*\)% in huge pages$/\1/p' <<<"$out")"
  done
  out=$("$kvd" bench --model "$model" --batch 1 --prompt-tokens 512 --decode-tokens 2 \
    --threads "$threads" 2>/dev/null)
  read -r _ prefill _ _ gflops < <(table_rows <<<"$out")
  record "prefill_tok_s_512_default" "$prefill"
  record "prefill_gflop_s_512_default" "$gflops"
  record "prefill_share_of_peak_512_default" "$(share_of_peak "$gflops" default <<<"$out")"
  for dtype in bf16 int8 int4; do
    read -r _ _ decode _ _ < <("$kvd" bench --model "$model" --dtype "$dtype" --batch 16 \
      --prompt-tokens 16 --decode-tokens 16 --threads "$threads" 2>/dev/null | table_rows)
    record "decode_tok_s_batch_16_$dtype" "$decode"
  done
  "$kvd" bench --model models/kvd-tiny --batch 1,16,1,16 --prompt-tokens 128 \
    --decode-tokens 128 --threads "$threads" 2>/dev/null | table_rows |
    awk '{ if ($1 == 1) one = $3; else printf "bundled_16_over_1 %.2f\n", $3 / one }' >>"$figures"
done

# Each figure in the order measured: its values, then their median.
awk '{ if (!($1 in values)) order[n++] = $1; values[$1] = values[$1] " " $2 }
  END { for (i = 0; i < n; ++i) print order[i] values[order[i]] }' "$figures" |
  while read -r name rest; do
    median=$(tr ' ' '\n' <<<"$rest" | sort -g | awk '{ v[NR] = $1 }
      END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    printf '%-32s %-28s median %s\n' "$name" "$rest" "$median"
  done
