#!/usr/bin/env bash
# The figures of a bench/peer/run.sh output directory, one a line: "FIGURE WHO ROUND VALUE", WHO
# being kvd or llama.cpp, from the r<ROUND>.kvd.<TAG>.txt files (kvd bench's table) and the
# r<ROUND>.llama.<TAG>.txt files (llama-bench's and llama-batched-bench's JSON lines). A file
# without its figure (a run that failed) gives no line, so a median is over the rounds that ran.
#
#   bench/peer/figures.sh OUT_DIR
set -uo pipefail
out=$1

# kvd bench's table on stdin, the row of batch $1: "decode prefill of_roofline of_triad", the
# columns found by their headers.
kvd_row() {
  awk -F'|' -v batch="$1" '
    function clean(s) { gsub(/[ %]/, "", s); return s }
    /\| *batch *\|/ { for (i = 2; i < NF; ++i) column[clean($i)] = i; next }
    ("batch" in column) && clean($column["batch"]) == batch {
      print clean($column["decodetok/s"]), clean($column["prefilltok/s"]),
            clean($column["ofroofline"]), ("oftriad" in column) ? clean($column["oftriad"]) : ""
      exit
    }'
}

# Values of the JSON lines on stdin: for each line, the fields named in $@ (strings unquoted),
# tab-separated. Enough for llama.cpp's flat JSON lines; not a JSON parser.
json_fields() {
  awk -v names="$*" '
    BEGIN { n = split(names, name, " ") }
    /^\{/ {
      line = ""
      for (i = 1; i <= n; ++i) {
        value = ""
        pattern = "\"" name[i] "\": *(\"[^\"]*\"|[^,}]*)"
        if (match($0, pattern)) {
          value = substr($0, RSTART, RLENGTH)
          sub(/^"[^"]*": */, "", value)
          gsub(/"/, "", value)
        }
        line = line (i > 1 ? "\t" : "") value
      }
      print line
    }'
}

# The format of a llama.cpp model type ("llama 1B BF16", "... Q8_0", "... Q4_K - Medium").
format_of() {
  case "$1" in
    *BF16*) echo bf16 ;;
    *Q8_0*) echo int8 ;;
    *Q4_K*) echo int4 ;;
    *F32*) echo f32 ;;
    *) echo other ;;
  esac
}

# The figures of every file, unordered.
all_figures() {
  for file in "$out"/r*.kvd.*.txt; do
    name=${file##*/}
    round=${name#r}; round=${round%%.*}
    tag=${name#r"$round".kvd.}; tag=${tag%.txt}
    case "$tag" in
      b1.*)
        read -r decode _ roofline triad < <(kvd_row 1 <"$file") || continue
        echo "decode_b1_${tag#b1.} kvd $round $decode"
        [[ -n "$triad" ]] && echo "b1_${tag#b1.}_share_of_triad kvd $round $triad"
        [[ -n "$roofline" ]] && echo "b1_${tag#b1.}_share_of_read kvd $round $roofline"
        ;;
      prefill.*)
        read -r _ prefill _ _ < <(kvd_row 1 <"$file") || continue
        echo "prefill_512_${tag#prefill.} kvd $round $prefill"
        ;;
      b16.*)
        read -r decode _ _ _ < <(kvd_row 16 <"$file") || continue
        echo "decode_b16_${tag#b16.} kvd $round $decode"
        ;;
      context*)
        tokens=${tag#context}; tokens=${tokens%%.*}
        read -r decode prefill _ _ < <(kvd_row 1 <"$file") || continue
        echo "decode_context${tokens}_bf16 kvd_kv_${tag##*.} $round $decode"
        echo "prefill_context${tokens}_bf16 kvd_kv_${tag##*.} $round $prefill"
        ;;
    esac
    # The bandwidths each batch-1 run measured, which its shares are of.
    if [[ "$tag" == b1.* ]]; then
      bandwidth=$(sed -n 's/.*measured read bandwidth \([0-9.]*\) GB\/s.*/\1/p' "$file" | head -1)
      [[ -n "$bandwidth" ]] && echo "read_bandwidth_gb_s kvd $round $bandwidth"
      triad=$(sed -n 's/.*STREAM triad \([0-9.]*\) GB\/s.*/\1/p' "$file" | head -1)
      [[ -n "$triad" ]] && echo "triad_bandwidth_gb_s kvd $round $triad"
    fi
  done
  for file in "$out"/r*.llama.*.txt; do
    name=${file##*/}
    round=${name#r}; round=${round%%.*}
    tag=${name#r"$round".llama.}; tag=${tag%.txt}
    case "$tag" in
      b1)
        json_fields model_type n_gen n_depth avg_ts <"$file" |
          while IFS=$'\t' read -r type gen depth rate; do
            [[ "$gen" -gt 0 && "$depth" == 128 ]] &&
              echo "decode_b1_$(format_of "$type") llama.cpp $round $rate"
          done
        ;;
      prefill)
        json_fields model_type n_prompt avg_ts <"$file" |
          while IFS=$'\t' read -r type prompt rate; do
            [[ "$prompt" == 512 ]] && echo "prefill_512_$(format_of "$type") llama.cpp $round $rate"
          done
        ;;
      b16.*)
        format=$(format_of "$(tr a-z A-Z <<<"${tag#b16.}")")
        json_fields pl speed_tg <"$file" |
          while IFS=$'\t' read -r parallel rate; do
            [[ "$parallel" == 16 ]] && echo "decode_b16_$format llama.cpp $round $rate"
          done
        ;;
      context)
        json_fields n_gen n_depth avg_ts <"$file" |
          while IFS=$'\t' read -r gen depth rate; do
            [[ "$gen" -gt 0 ]] && echo "decode_context${depth}_bf16 llama.cpp $round $rate"
          done
        ;;
      prompt)
        json_fields n_prompt n_gen avg_ts <"$file" |
          while IFS=$'\t' read -r prompt gen rate; do
            [[ "$gen" == 0 ]] && echo "prefill_context${prompt}_bf16 llama.cpp $round $rate"
          done
        ;;
    esac
  done
}

# The table's order: a figure's rank, then the rounds in order (r1 before r2; a stable sort).
rank() {
  awk '{
    n = split("decode_b1_bf16 decode_b1_int8 decode_b1_int4 decode_b16_bf16 decode_b16_int8 " \
              "prefill_512_bf16 decode_context prefill_context b1_bf16_share b1_int8_share b1_int4_share " \
              "read_bandwidth triad_bandwidth", order, " ")
    for (i = 1; i <= n; ++i) if (index($1, order[i]) == 1) break
    print i, $0
  }'
}

shopt -s nullglob
all_figures | rank | sort -s -n -k1,1 | cut -d' ' -f2-
exit 0
