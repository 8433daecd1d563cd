// Paged GQA decode attention, f32: decode_attention.cuh's kernels (ref. cpu/attention.cc).
#include "kernels/cuda/decode_attention.cuh"

#include <math_constants.h>

#include <algorithm>

#include "kernels/cuda/decode_attention_kernels.cuh"

namespace kvd::kernels::cuda {
namespace {

template <int kLanes, int kVecs, int kHeads>
void Launch(dim3 grid, const float* q, const KvPool& pool, const AttentionTask* tasks,
            const int32_t* tables, const AttentionShape& shape, int64_t q_cols, int32_t partition,
            int32_t partitions, float* partials, float* out, float* lse, cudaStream_t stream) {
  constexpr int kThreads = (kLanes * 4 * kVecs <= 128 ? 8 : 4) * kWarpSize;
  DecodeAttentionKernel<kLanes, kVecs, kHeads><<<grid, kThreads, 0, stream>>>(
      q, pool, tasks, tables, shape, q_cols, partition, partitions, partials, out, lse);
}

}  // namespace

int64_t DecodePartialFloats(int64_t partial_partitions, const AttentionShape& shape) {
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  return partial_partitions * group * (shape.head_dim + 2);
}

void LaunchDecodeAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                           int32_t num_tasks, const int32_t* tables, const AttentionShape& shape,
                           int64_t q_cols, int32_t partition, int32_t partitions, float* partials,
                           float* out, float* lse, cudaStream_t stream) {
  if (num_tasks <= 0 || partitions <= 0) return;
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t heads = DecodeHeadsPerBlock(group);
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(partitions),
                  static_cast<unsigned>((group + heads - 1) / heads));
  const auto run = [&](auto launch) {
    launch(grid, q, pool, tasks, tables, shape, q_cols, partition, partitions, partials, out, lse,
           stream);
  };
  // Lanes per entry and float4s per lane for the head size, times the heads per block.
  const auto for_heads = [&]<int kLanes, int kVecs>() {
    switch (heads) {
      case 1:
        run(Launch<kLanes, kVecs, 1>);
        break;
      case 2:
        run(Launch<kLanes, kVecs, 2>);
        break;
      case 4:
        run(Launch<kLanes, kVecs, 4>);
        break;
      default:
        run(Launch<kLanes, kVecs, 8>);
        break;
    }
  };
  if (shape.head_dim <= 64) {
    for_heads.template operator()<16, 1>();
  } else if (shape.head_dim <= 128) {
    for_heads.template operator()<32, 1>();
  } else {
    for_heads.template operator()<32, 2>();
  }
  if (partitions > 1) {
    MergePartitionsKernel<<<dim3(static_cast<unsigned>(num_tasks), static_cast<unsigned>(group)),
                            kMergeThreads, 0, stream>>>(tasks, partials, partition, partitions,
                                                        shape, q_cols, out, lse);
  }
}

}  // namespace kvd::kernels::cuda
