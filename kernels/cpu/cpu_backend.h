// The CPU backend: the reference implementation of every Backend op, computing in f32,
// multi-threaded. Weight matrices stay in f32, bf16 or f16 or are quantized at load to int8 or
// int4 (BackendOptions::weight_dtype, else the checkpoint's own type); projections run on the
// fastest matmul variant this CPU has (matmul.h), and f32 projections of many rows on OpenBLAS.
#pragma once

#include <memory>
#include <optional>

#include "base/mutex.h"
#include "kernels/backend.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope_table.h"
#include "kernels/cpu/silu_mul.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::kernels::cpu {

// The CPU's features and the kernels projections run on, as KernelSummary says.
std::string CpuKernelSummary();

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);

  std::string_view name() const override { return "cpu"; }
  std::string KernelSummary() const override;
  size_t MemoryBytes() const override;
  absl::Status CheckKvCacheType(DType dtype) const override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override;
  using Backend::PrepareWeight;
  absl::StatusOr<PreparedWeight> PrepareWeight(const Tensor& host,
                                               std::optional<DType> dtype) override;
  void CopyToHost(const Tensor& src, float* dst) override;
  void CopyFromHost(const float* src, Tensor dst) override;

  void GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override;
  void Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) override;
  void LinearGroup(const Tensor& x, std::span<const Projection> projections) override;
  void GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight, Tensor up,
                   Tensor out) override;
  void ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                 std::span<const float> inv_freq) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor out) override;
  void Add(Tensor x, const Tensor& y) override;
  void AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                std::span<const SequenceKvRef> sequences) override;
  absl::Status CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                           std::span<const KvSlot> dst) override;
  absl::Status ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots, float* keys,
                           float* values, float* log_votes) override;
  absl::Status WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                            const float* values, const float* log_votes) override;
  void Attention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                 const AttentionShape& shape, Tensor out) override;
  void TopLogits(const Tensor& logits, int32_t k, std::span<const float> inverse_temperatures,
                 float* values, int32_t* ids, float* log_normalizers) override;

 private:
  // The type a host weight is kept in: vectors f32; matrices the configured type, except that
  // a matrix whose rows are not whole quantization blocks keeps the checkpoint's.
  DType KeptType(const Tensor& host, std::optional<DType> dtype) const;
  // Quantizes `host` into `quantized` (allocated, in a quantized type), rows in parallel.
  absl::Status Quantize(const Tensor& host, const Tensor& quantized);
  // The variant a projection of `rows` rows by `weight` runs on.
  const MatmulVariant& MatmulFor(const Tensor& weight, int64_t rows) const;
  // out = x · weightᵀ as a product for ParallelMatmul.
  MatmulProduct ProductFor(const Tensor& x, const Tensor& weight, Tensor out) const;

  ThreadPool pool_;
  const std::optional<DType> weight_dtype_;
  const MatmulVariant matmul_;
  const MatmulVariant blas_;
  const RmsNormKernel rms_norm_;
  const SiluMulKernel silu_mul_;
  base::Mutex rope_mu_;
  RopeTable rope_table_ ABSL_GUARDED_BY(rope_mu_);
};

}  // namespace kvd::kernels::cpu
