#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a bounded time each, from its seed corpus and
# with its dictionary, and fails on any crash, leak, timeout or out-of-memory. Prints one line
# per target: executions, seconds, executions per second, coverage and corpus size.
#
#   tests/fuzz/run.sh [--build] [SECONDS_PER_TARGET (15)] [BUILD_DIR (build-fuzz)] [TARGET...]
#
# --build configures BUILD_DIR with KVD_FUZZ=ON (clang) and builds the targets first
# (KVD_UNITY_BUILD=ON: a unity build, cmake/options.cmake). JOBS=N (default nproc) sets the
# build's parallelism and how many targets fuzz at once. Inputs found interesting are kept in
# BUILD_DIR/fuzz/corpus/<target>, never in the committed seeds; a crashing input is written
# to BUILD_DIR/fuzz/artifacts/ and the line says how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=0
if [[ "${1:-}" == "--build" ]]; then
  build=1
  shift
fi
seconds=${1:-15}
build_dir=${2:-build-fuzz}
shift $(($# < 2 ? $# : 2))

# target: max_len (bytes per input), timeout (seconds per input), rss_limit_mb.
declare -A settings=(
  [safetensors_header]="8192 10 2048"
  [model_config]="4096 10 2048"
  [generation_config]="1024 10 2048"
  [tokenizer_json]="32768 20 2048"
  [tokenizer_text]="4096 10 2048"
  [chat_template]="8192 30 2048"
  [payload_codec]="4096 10 2048"
  [document_meta]="4096 10 2048"
  [head_profile]="2048 10 2048"
  [redis_url]="256 10 2048"
  [server_config]="8192 10 2048"
  [byte_size]="64 10 2048"
  [cgroup_limit]="1024 10 2048"
  [smaps_rollup]="1024 10 2048"
  [query_string]="1024 10 2048"
  [completion_body]="4096 20 2048"
  [document_body]="2048 10 2048"
  [keepkv_request]="1024 10 2048"
  [tokenize_body]="2048 20 2048"
  [messages_body]="4096 20 2048"
  [responses_body]="4096 20 2048"
  [response_record]="4096 10 2048"
  [structured_constraint]="2048 20 2048"
  [tool_call_stream]="4096 10 2048"
  [speculative_questions]="2048 10 2048"
  [http_request]="4096 10 2048"
  [grpc_generate]="2048 20 2048"
  [grpc_upload]="2048 10 2048"
)

if ((build)); then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKVD_WITH_CUDA=OFF -DKVD_FUZZ=ON ${KVD_UNITY_BUILD:+-DKVD_UNITY_BUILD=$KVD_UNITY_BUILD} >/dev/null
  cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" --target kvd_fuzz_targets
fi

bin_dir=$build_dir/tests/fuzz
built=()
for binary in "$bin_dir"/*_fuzz; do
  [[ -x "$binary" ]] || continue
  name=$(basename "$binary" _fuzz)
  [[ -n "${settings[$name]:-}" ]] \
    || { echo "tests/fuzz/run.sh has no settings for $name; add them" >&2; exit 1; }
  built+=("$name")
done
((${#built[@]})) || { echo "no fuzz targets in $bin_dir (run with --build)" >&2; exit 1; }
targets=("$@")
((${#targets[@]})) || targets=("${built[@]}")

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
work=$build_dir/fuzz
mkdir -p "$work/logs" "$work/artifacts"
# One target's run: its line goes to logs/<target>.line and its exit status to
# logs/<target>.status, so targets run side by side and still print in order.
fuzz_one() {
  local name=$1 max_len timeout rss
  read -r max_len timeout rss <<<"${settings[$name]}"
  local corpus=$work/corpus/$name log=$work/logs/$name.log line=$work/logs/$name.line
  mkdir -p "$corpus"
  local dict=()
  [[ -f tests/fuzz/$name.dict ]] && dict=("-dict=tests/fuzz/$name.dict")
  local status=0
  "$bin_dir/${name}_fuzz" "$corpus" "tests/fuzz/corpus/$name" "${dict[@]}" \
    -seed="${KVD_FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss" -max_len="$max_len" \
    -artifact_prefix="$work/artifacts/$name-" -print_final_stats=1 >"$log" 2>&1 || status=$?
  local runs rate took done_line cov corp artifact
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done_line")
  echo "${runs:-0}" >"$work/logs/$name.runs"
  if ((status == 0)); then
    printf '%-20s ok    %10s runs %5ss %8s/s  cov %-6s corpus %s\n' "$name" "${runs:-?}" \
      "${took:-?}" "${rate:-?}" "${cov:-?}" "${corp:-?}" >"$line"
  else
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    {
      printf '%-20s FAIL  exit %s after %s runs; log %s\n' "$name" "$status" "${runs:-?}" "$log"
      grep -E '^(==[0-9]+== ?ERROR|SUMMARY|.*runtime error|fuzz property failed|ALARM)' "$log" \
        | head -5 | sed 's/^/    /' || true
      [[ -z "$artifact" ]] || echo "    reproduce: $bin_dir/${name}_fuzz $artifact"
    } >"$line"
  fi
  echo "$status" >"$work/logs/$name.status"
}

for name in "${targets[@]}"; do
  [[ -n "${settings[$name]:-}" && -x "$bin_dir/${name}_fuzz" ]] \
    || { echo "unknown or unbuilt fuzz target: $name" >&2; exit 1; }
  rm -f "$work/logs/$name.status"
done
# Targets run JOBS at a time (default nproc), each for its full time.
running=0
for name in "${targets[@]}"; do
  if ((running >= ${JOBS:-$(nproc)})); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$name" &
  running=$((running + 1))
done
wait || true
failed=()
total_runs=0
for name in "${targets[@]}"; do
  cat "$work/logs/$name.line"
  total_runs=$((total_runs + $(cat "$work/logs/$name.runs")))
  [[ "$(cat "$work/logs/$name.status" 2>/dev/null)" == 0 ]] || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "fuzz: ${#targets[@]} targets, $total_runs runs, failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, $total_runs runs, no failures"
