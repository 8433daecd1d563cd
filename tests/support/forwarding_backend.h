// A backend that runs every op on another one, for tests to derive from and change a few ops
// (a failing KV move, a step that stalls) while the model still runs for real.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "kernels/backend.h"

namespace kvd::test_support {

class ForwardingBackend : public kernels::Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<kernels::Backend> inner) : inner_(std::move(inner)) {}

  std::string_view name() const override { return inner_->name(); }
  std::string KernelSummary() const override { return inner_->KernelSummary(); }
  size_t MemoryBytes() const override { return inner_->MemoryBytes(); }
  absl::Status CheckKvCacheType(kernels::DType dtype) const override {
    return inner_->CheckKvCacheType(dtype);
  }
  absl::StatusOr<std::unique_ptr<kernels::DeviceBuffer>> Allocate(size_t bytes) override {
    return inner_->Allocate(bytes);
  }
  using kernels::Backend::PrepareWeight;
  absl::StatusOr<kernels::PreparedWeight> PrepareWeight(
      const kernels::Tensor& host, std::optional<kernels::DType> dtype) override {
    return inner_->PrepareWeight(host, dtype);
  }
  void CopyToHost(const kernels::Tensor& src, float* dst) override { inner_->CopyToHost(src, dst); }
  void CopyFromHost(const float* src, kernels::Tensor dst) override {
    inner_->CopyFromHost(src, dst);
  }
  void GatherRows(const kernels::Tensor& table, std::span<const int32_t> indices,
                  kernels::Tensor out) override {
    inner_->GatherRows(table, indices, out);
  }
  void RmsNorm(const kernels::Tensor& x, const kernels::Tensor& weight, float eps,
               kernels::Tensor out) override {
    inner_->RmsNorm(x, weight, eps, out);
  }
  void Linear(const kernels::Tensor& x, const kernels::Tensor& weight, const kernels::Tensor* bias,
              kernels::Tensor out) override {
    inner_->Linear(x, weight, bias, out);
  }
  void LinearGroup(const kernels::Tensor& x,
                   std::span<const kernels::Projection> projections) override {
    inner_->LinearGroup(x, projections);
  }
  void GatedLinear(const kernels::Tensor& x, const kernels::Tensor& gate_weight,
                   const kernels::Tensor& up_weight, kernels::Tensor up,
                   kernels::Tensor out) override {
    inner_->GatedLinear(x, gate_weight, up_weight, up, out);
  }
  void ApplyRope(kernels::Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                 std::span<const float> inv_freq) override {
    inner_->ApplyRope(x, num_heads, positions, inv_freq);
  }
  void SiluMul(const kernels::Tensor& gate, const kernels::Tensor& up,
               kernels::Tensor out) override {
    inner_->SiluMul(gate, up, out);
  }
  void Add(kernels::Tensor x, const kernels::Tensor& y) override { inner_->Add(x, y); }
  void AppendKv(const kernels::Tensor& k, const kernels::Tensor& v, const kernels::KvPool& pool,
                std::span<const kernels::SequenceKvRef> sequences) override {
    inner_->AppendKv(k, v, pool, sequences);
  }
  absl::Status CopyKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> src,
                           std::span<const kernels::KvSlot> dst) override {
    return inner_->CopyKvSlots(pool, src, dst);
  }
  absl::Status ReadKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                           float* keys, float* values, float* log_votes) override {
    return inner_->ReadKvSlots(pool, slots, keys, values, log_votes);
  }
  absl::Status WriteKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                            const float* keys, const float* values,
                            const float* log_votes) override {
    return inner_->WriteKvSlots(pool, slots, keys, values, log_votes);
  }
  void Attention(const kernels::Tensor& q, const kernels::KvPool& pool,
                 std::span<const kernels::SequenceKvRef> sequences,
                 const kernels::AttentionShape& shape, kernels::Tensor out) override {
    inner_->Attention(q, pool, sequences, shape, out);
  }
  void TopLogits(const kernels::Tensor& logits, int32_t k,
                 std::span<const float> inverse_temperatures, float* values, int32_t* ids,
                 float* log_normalizers) override {
    inner_->TopLogits(logits, k, inverse_temperatures, values, ids, log_normalizers);
  }
  void Synchronize() override { inner_->Synchronize(); }
  absl::Status TakeError() override { return inner_->TakeError(); }

 private:
  std::unique_ptr<kernels::Backend> inner_;
};

}  // namespace kvd::test_support
