#!/usr/bin/env bash
# The device check for the CUDA backend, in two halves, because the GPU machine has CUDA but
# none of kvd's Debian libraries and fetches nothing:
#   tests/gpu/run.sh --pack   here: builds with CUDA (Release) and puts the GPU test, the
#                             benchmark, the random-model maker and every shared library they
#                             need beyond glibc, the C++ runtime and CUDA's into gpu-pack/
#                             (git-ignored, the libraries as one lib.tar.xz so that it stays
#                             under the 64 MiB a device call carries: carry it to the device)
#   tests/gpu/run.sh          on the device: runs the packed `gpu` tests, then the benchmark on
#                             a random model in Llama 3.2 1B's shape, and prints the tables:
#                             the tests' results, then per weight dtype throughput (with each
#                             decode step's logits copy to the host) and KVzip scoring against
#                             prefill
set -euo pipefail
cd "$(dirname "$0")/../.."
pack=gpu-pack

if [[ "${1:-}" == "--pack" ]]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVD_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-gpu -j "$(nproc)" --target gpu_cuda_backend_test gpu_cuda_attention_test \
    gpu_cuda_top_logits_test gpu_cuda_speculative_test gpu_bench make_random_model
  rm -rf "$pack" && mkdir -p "$pack/lib"
  cp build-gpu/tests/gpu/gpu_cuda_backend_test build-gpu/tests/gpu/gpu_cuda_attention_test \
    build-gpu/tests/gpu/gpu_cuda_top_logits_test build-gpu/tests/gpu/gpu_cuda_speculative_test \
    build-gpu/tests/gpu/gpu_bench \
    build-gpu/make_random_model "$pack/"
  strip "$pack"/gpu_cuda_backend_test "$pack"/gpu_cuda_attention_test \
    "$pack"/gpu_cuda_top_logits_test "$pack"/gpu_cuda_speculative_test "$pack"/gpu_bench \
    "$pack"/make_random_model
  # Libraries outside glibc, the C++ runtime and CUDA (the device has newer ones, and CUDA 13's
  # runtime and cuBLAS; cuBLAS alone is far over what can be carried).
  for binary in "$pack"/gpu_cuda_backend_test "$pack"/gpu_cuda_attention_test \
    "$pack"/gpu_cuda_top_logits_test "$pack"/gpu_cuda_speculative_test "$pack"/gpu_bench \
    "$pack"/make_random_model; do
    ldd "$binary" | awk '/=> \// {print $3}'
  done | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  # OpenBLAS and ICU's data alone are over 64 MiB: the libraries travel compressed.
  tar -C "$pack" -cJf "$pack/lib.tar.xz" lib && rm -rf "$pack/lib"
  du -sh "$pack"
  exit 0
fi

[[ -x "$pack/gpu_cuda_backend_test" ]] || { echo "no $pack/: run tests/gpu/run.sh --pack and carry it" >&2; exit 2; }
[[ -d "$pack/lib" ]] || tar -C "$pack" -xJf "$pack/lib.tar.xz"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
# cuBLAS 13 from the CUDA toolkit, or from the Python wheels where the toolkit has none.
cublas_dir=$(dirname "$(find /usr/local/cuda/lib64 /usr/local/cuda*/targets /usr/lib /opt \
  -name 'libcublas.so.13*' 2>/dev/null | head -1)" 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD/$pack/lib:/usr/local/cuda/lib64${cublas_dir:+:$cublas_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KVD_MODEL_DIR="$PWD/models/kvd-tiny"
log_dir=${OUT:-/tmp}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
status=0
rm -f /tmp/gpu_bench.log /tmp/gpu_test.log
# Each test binary has a time limit; one that fails runs again under compute-sanitizer's
# memcheck (where the runtime lets it), so that a bad access is named in the same run.
for test in gpu_cuda_backend_test gpu_cuda_attention_test gpu_cuda_top_logits_test \
  gpu_cuda_speculative_test; do
  test_status=0
  timeout 120 "$pack/$test" 2>&1 | tee -a /tmp/gpu_test.log || test_status=$?
  if [[ $test_status -ne 0 ]]; then
    status=$test_status
    timeout 120 "$sanitizer" --tool memcheck --print-limit 20 "$pack/$test" \
      --gtest_brief=1 >"$log_dir/$test.memcheck.log" 2>&1 || true
    tail -40 "$log_dir/$test.memcheck.log"
  fi
done
cp /tmp/gpu_test.log "$log_dir/gpu_test.log" 2>/dev/null || true
# Llama 3.2 1B's shape with random bf16 weights (widened to f32 on the device).
"$pack/make_random_model" --out /tmp/llama-1b-random >/dev/null
# A run should take under a minute on an H200; the limit keeps a slow or stuck one from taking
# the device's time (what it printed before stays in the log).
# The op times (where a step's time goes) are read for the faster type only. Logits to tokens
# (--sampling: whole rows against top logits) does not depend on the model; its table from the
# first device run is in docs/benchmarks.md.
for dtype in bf16 f32; do
  once=$([[ "$dtype" == bf16 ]] && echo "--op-times" || true)
  timeout 120 "$pack/gpu_bench" --model /tmp/llama-1b-random --batch 1,16,64 --dtype "$dtype" \
    $once | tee -a /tmp/gpu_bench.log || status=$?
done
# KeepKV's cost, last: its state lives on the host, and a batch of 64 may not end in time.
for batch in 16 64; do
  timeout 75 "$pack/gpu_bench" --model /tmp/llama-1b-random --dtype bf16 --keepkv \
    --keepkv-batch "$batch" | tee -a /tmp/gpu_bench.log || status=$?
done
echo
echo "| test | result |"
echo "|---|---|"
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' /tmp/gpu_test.log |
  sed -E 's/^\[ +([A-Z]+) +\] ([^ ]+).*/| \2 | \1 |/' || true
echo
# Each table's title line, set off by blank lines so that the markdown tables stay apart.
grep -E '^\||^(bf16|f32) weights, |^logits to tokens: |^batch [0-9]+: |^budget ' /tmp/gpu_bench.log |
  sed -E 's/^((bf16|f32) weights, .*|logits to tokens: .*|batch [0-9]+: .*|budget .*)$/\n\1\n/' || true
cp /tmp/gpu_bench.log "$log_dir/gpu_bench.log" 2>/dev/null || true
exit $status
