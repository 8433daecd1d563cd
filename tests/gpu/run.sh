#!/usr/bin/env bash
# The device check for the CUDA backend, in two halves, because the GPU machine has CUDA but
# none of kvd's Debian libraries and fetches nothing:
#   tests/gpu/run.sh --pack   here: builds with CUDA (Release) and puts the GPU test, the
#                             benchmark, the random-model maker and every shared library they
#                             need beyond glibc, the C++ runtime and CUDA's into gpu-pack/
#                             (git-ignored, under 64 MiB: carry it to the device)
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
    gpu_cuda_top_logits_test gpu_bench make_random_model
  rm -rf "$pack" && mkdir -p "$pack/lib"
  cp build-gpu/tests/gpu/gpu_cuda_backend_test build-gpu/tests/gpu/gpu_cuda_attention_test \
    build-gpu/tests/gpu/gpu_cuda_top_logits_test build-gpu/tests/gpu/gpu_bench \
    build-gpu/make_random_model "$pack/"
  strip "$pack"/gpu_cuda_backend_test "$pack"/gpu_cuda_attention_test \
    "$pack"/gpu_cuda_top_logits_test "$pack"/gpu_bench "$pack"/make_random_model
  # Libraries outside glibc, the C++ runtime and CUDA (the device has newer ones, and CUDA 13's
  # runtime and cuBLAS; cuBLAS alone is far over what can be carried).
  for binary in "$pack"/gpu_cuda_backend_test "$pack"/gpu_cuda_attention_test \
    "$pack"/gpu_cuda_top_logits_test "$pack"/gpu_bench "$pack"/make_random_model; do
    ldd "$binary" | awk '/=> \// {print $3}'
  done | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas|libcublasLt|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  du -sh "$pack"
  exit 0
fi

[[ -x "$pack/gpu_cuda_backend_test" ]] || { echo "no $pack/: run tests/gpu/run.sh --pack and carry it" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
export LD_LIBRARY_PATH="$PWD/$pack/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KVD_MODEL_DIR="$PWD/models/kvd-tiny"
status=0
rm -f /tmp/gpu_bench.log
"$pack/gpu_cuda_backend_test" 2>&1 | tee /tmp/gpu_test.log || status=$?
"$pack/gpu_cuda_attention_test" 2>&1 | tee -a /tmp/gpu_test.log || status=$?
"$pack/gpu_cuda_top_logits_test" 2>&1 | tee -a /tmp/gpu_test.log || status=$?
# Llama 3.2 1B's shape with random bf16 weights (widened to f32 on the device).
"$pack/make_random_model" --out /tmp/llama-1b-random >/dev/null
# A run should take under a minute on an H200; the limit keeps a slow or stuck one from taking
# the device's time (what it printed before stays in the log).
# Logits to tokens (whole rows against top logits) does not depend on the weights: once.
for dtype in bf16 f32; do
  sampling=$([[ "$dtype" == bf16 ]] && echo --sampling || true)
  timeout 180 "$pack/gpu_bench" --model /tmp/llama-1b-random --batch 1,16,64 --dtype "$dtype" \
    $sampling | tee -a /tmp/gpu_bench.log || status=$?
done
echo
echo "| test | result |"
echo "|---|---|"
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' /tmp/gpu_test.log |
  sed -E 's/^\[ +([A-Z]+) +\] ([^ ]+).*/| \2 | \1 |/' || true
echo
# Each table's title line, set off by blank lines so that the markdown tables stay apart.
grep -E '^\||^(bf16|f32) weights, |^logits to tokens: ' /tmp/gpu_bench.log |
  sed -E 's/^((bf16|f32) weights, .*|logits to tokens: .*)$/\n\1\n/' || true
exit $status
