// Device kernels that move KV entries into, within and out of the paged pool
// (kv_entries_kernels.cuh's); the CPU backend's AppendKvEntries and Copy/Read/WriteKvSlots are
// their reference.
#include "kernels/cuda/kv_entries.cuh"

#include "kernels/cuda/kv_entries_kernels.cuh"

namespace kvd::kernels::cuda {

void LaunchAppendKv(const float* k, const float* v, int64_t cols, const int32_t* rows,
                    const int32_t* heads, const int64_t* slots, int64_t count, const KvPool& pool,
                    cudaStream_t stream) {
  if (count <= 0) return;
  AppendKvKernel<<<BlocksFor(count), kThreads, 0, stream>>>(k, v, cols, rows, heads, slots, count,
                                                            pool);
}

void LaunchCopyKvSlots(const int64_t* src, const int64_t* dst, int64_t count, const KvPool& pool,
                       cudaStream_t stream) {
  if (count <= 0) return;
  CopyKvSlotsKernel<<<BlocksFor(count), kThreads, 0, stream>>>(src, dst, count, pool);
}

void LaunchGatherKvSlots(const int64_t* slots, int64_t count, const KvPool& pool, float* keys,
                         float* values, float* log_votes, cudaStream_t stream) {
  if (count <= 0) return;
  GatherKvSlotsKernel<<<BlocksFor(count), kThreads, 0, stream>>>(slots, count, pool, keys, values,
                                                                 log_votes);
}

void LaunchScatterKvSlots(const int64_t* slots, int64_t count, const float* keys,
                          const float* values, const float* log_votes, const KvPool& pool,
                          cudaStream_t stream) {
  if (count <= 0) return;
  ScatterKvSlotsKernel<<<BlocksFor(count), kThreads, 0, stream>>>(slots, count, keys, values,
                                                                  log_votes, pool);
}

}  // namespace kvd::kernels::cuda
