// decode_attention.cu's launches on the CPU (see attention_launches.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/decode_attention_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/attention_launches.h"

namespace kvd::kernels::cuda::emulation {
namespace {

template <int kLanes, int kVecs, int kHeads>
absl::Status Run(dim3 grid, const float* q, const KvPool& pool, const AttentionTask* tasks,
                 const int32_t* tables, const AttentionShape& shape, int64_t q_cols,
                 int32_t partition, int32_t partitions, float* partials, float* out, float* lse) {
  constexpr int kThreads = (kLanes * 4 * kVecs <= 128 ? 8 : 4) * kWarpSize;
  return Launch(DecodeAttentionKernel<kLanes, kVecs, kHeads>, grid, kThreads, 0, q, pool, tasks,
                tables, shape, q_cols, partition, partitions, partials, out, lse);
}

}  // namespace

absl::Status EmulateDecodeAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                                    int32_t num_tasks, const int32_t* tables,
                                    const AttentionShape& shape, int64_t q_cols, int32_t partition,
                                    int32_t partitions, float* partials, float* out, float* lse) {
  if (num_tasks <= 0 || partitions <= 0) return absl::OkStatus();
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t heads = DecodeHeadsPerBlock(group);
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(partitions),
                  static_cast<unsigned>((group + heads - 1) / heads));
  const auto run = [&](auto launch) {
    return launch(grid, q, pool, tasks, tables, shape, q_cols, partition, partitions, partials, out,
                  lse);
  };
  const auto for_heads = [&]<int kLanes, int kVecs>() {
    switch (heads) {
      case 1:
        return run(Run<kLanes, kVecs, 1>);
      case 2:
        return run(Run<kLanes, kVecs, 2>);
      case 4:
        return run(Run<kLanes, kVecs, 4>);
      default:
        return run(Run<kLanes, kVecs, 8>);
    }
  };
  absl::Status status;
  if (shape.head_dim <= 64) {
    status = for_heads.template operator()<16, 1>();
  } else if (shape.head_dim <= 128) {
    status = for_heads.template operator()<32, 1>();
  } else {
    status = for_heads.template operator()<32, 2>();
  }
  if (!status.ok() || partitions == 1) return status;
  return Launch(MergePartitionsKernel,
                dim3(static_cast<unsigned>(num_tasks), static_cast<unsigned>(group)), kMergeThreads,
                0, tasks, partials, partition, partitions, shape, q_cols, out, lse);
}

}  // namespace kvd::kernels::cuda::emulation
