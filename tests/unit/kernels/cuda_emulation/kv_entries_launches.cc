// kv_entries.cu's launches on the CPU (see kv_entries_launches.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/kv_entries_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/kv_entries_launches.h"

namespace kvd::kernels::cuda::emulation {

absl::Status EmulateAppendKv(const float* k, const float* v, int64_t cols, const int32_t* rows,
                             const int32_t* heads, const int64_t* slots, int64_t count,
                             const KvPool& pool) {
  if (count <= 0) return absl::OkStatus();
  return Launch(AppendKvKernel, BlocksFor(count), kThreads, 0, k, v, cols, rows, heads, slots,
                count, pool);
}

absl::Status EmulateCopyKvSlots(const int64_t* src, const int64_t* dst, int64_t count,
                                const KvPool& pool) {
  if (count <= 0) return absl::OkStatus();
  return Launch(CopyKvSlotsKernel, BlocksFor(count), kThreads, 0, src, dst, count, pool);
}

absl::Status EmulateGatherKvSlots(const int64_t* slots, int64_t count, const KvPool& pool,
                                  float* keys, float* values, float* log_votes) {
  if (count <= 0) return absl::OkStatus();
  return Launch(GatherKvSlotsKernel, BlocksFor(count), kThreads, 0, slots, count, pool, keys,
                values, log_votes);
}

absl::Status EmulateScatterKvSlots(const int64_t* slots, int64_t count, const float* keys,
                                   const float* values, const float* log_votes,
                                   const KvPool& pool) {
  if (count <= 0) return absl::OkStatus();
  return Launch(ScatterKvSlotsKernel, BlocksFor(count), kThreads, 0, slots, count, keys, values,
                log_votes, pool);
}

}  // namespace kvd::kernels::cuda::emulation
