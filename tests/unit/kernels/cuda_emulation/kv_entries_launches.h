// kv_entries.cu's launches on the CPU: the same kernel code, launched the way that file does,
// over host memory. Arguments as the Launch* functions take them, without a stream.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda::emulation {

[[nodiscard]] absl::Status EmulateAppendKv(const float* k, const float* v, int64_t cols,
                                           const int32_t* rows, const int32_t* heads,
                                           const int64_t* slots, int64_t count, const KvPool& pool);
[[nodiscard]] absl::Status EmulateCopyKvSlots(const int64_t* src, const int64_t* dst, int64_t count,
                                              const KvPool& pool);
[[nodiscard]] absl::Status EmulateGatherKvSlots(const int64_t* slots, int64_t count,
                                                const KvPool& pool, float* keys, float* values,
                                                float* log_votes);
[[nodiscard]] absl::Status EmulateScatterKvSlots(const int64_t* slots, int64_t count,
                                                 const float* keys, const float* values,
                                                 const float* log_votes, const KvPool& pool);

}  // namespace kvd::kernels::cuda::emulation
