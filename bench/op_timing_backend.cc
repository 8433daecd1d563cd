#include "bench/op_timing_backend.h"

#include <chrono>
#include <type_traits>

namespace kvd::bench {

template <typename Op>
auto OpTimingBackend::Timed(std::string_view name, Op&& op) {
  if (mode_ == Mode::kOff) return op();
  const bool synchronized = mode_ == Mode::kSynchronized;
  if (synchronized) inner_.Synchronize();
  const auto start = std::chrono::steady_clock::now();
  auto record = [&] {
    if (synchronized) inner_.Synchronize();
    OpTime& time = times_[name];
    ++time.calls;
    time.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if constexpr (std::is_void_v<decltype(op())>) {
    op();
    record();
  } else {
    auto result = op();
    record();
    return result;
  }
}

void OpTimingBackend::CopyToHost(const kernels::Tensor& src, float* dst) {
  Timed("CopyToHost", [&] { inner_.CopyToHost(src, dst); });
}

void OpTimingBackend::CopyFromHost(const float* src, kernels::Tensor dst) {
  Timed("CopyFromHost", [&] { inner_.CopyFromHost(src, dst); });
}

void OpTimingBackend::GatherRows(const kernels::Tensor& table, std::span<const int32_t> indices,
                                 kernels::Tensor out) {
  Timed("GatherRows", [&] { inner_.GatherRows(table, indices, out); });
}

void OpTimingBackend::RmsNorm(const kernels::Tensor& x, const kernels::Tensor& weight, float eps,
                              kernels::Tensor out) {
  Timed("RmsNorm", [&] { inner_.RmsNorm(x, weight, eps, out); });
}

void OpTimingBackend::Linear(const kernels::Tensor& x, const kernels::Tensor& weight,
                             const kernels::Tensor* bias, kernels::Tensor out) {
  Timed("Linear", [&] { inner_.Linear(x, weight, bias, out); });
}

void OpTimingBackend::LinearGroup(const kernels::Tensor& x,
                                  std::span<const kernels::Projection> projections) {
  Timed("LinearGroup", [&] { inner_.LinearGroup(x, projections); });
}

void OpTimingBackend::GatedLinear(const kernels::Tensor& x, const kernels::Tensor& gate_weight,
                                  const kernels::Tensor& up_weight, kernels::Tensor up,
                                  kernels::Tensor out) {
  Timed("GatedLinear", [&] { inner_.GatedLinear(x, gate_weight, up_weight, up, out); });
}

void OpTimingBackend::ApplyRope(kernels::Tensor x, int32_t num_heads,
                                std::span<const int32_t> positions,
                                std::span<const float> inv_freq) {
  Timed("ApplyRope", [&] { inner_.ApplyRope(x, num_heads, positions, inv_freq); });
}

void OpTimingBackend::SiluMul(const kernels::Tensor& gate, const kernels::Tensor& up,
                              kernels::Tensor out) {
  Timed("SiluMul", [&] { inner_.SiluMul(gate, up, out); });
}

void OpTimingBackend::Add(kernels::Tensor x, const kernels::Tensor& y) {
  Timed("Add", [&] { inner_.Add(x, y); });
}

void OpTimingBackend::AppendKv(const kernels::Tensor& k, const kernels::Tensor& v,
                               const kernels::KvPool& pool,
                               std::span<const kernels::SequenceKvRef> sequences) {
  Timed("AppendKv", [&] { inner_.AppendKv(k, v, pool, sequences); });
}

absl::Status OpTimingBackend::CopyKvSlots(const kernels::KvPool& pool,
                                          std::span<const kernels::KvSlot> src,
                                          std::span<const kernels::KvSlot> dst) {
  return Timed("CopyKvSlots", [&] { return inner_.CopyKvSlots(pool, src, dst); });
}

absl::Status OpTimingBackend::ReadKvSlots(const kernels::KvPool& pool,
                                          std::span<const kernels::KvSlot> slots, float* keys,
                                          float* values, float* log_votes) {
  return Timed("ReadKvSlots", [&] { return inner_.ReadKvSlots(pool, slots, keys, values, log_votes); });
}

absl::Status OpTimingBackend::WriteKvSlots(const kernels::KvPool& pool,
                                           std::span<const kernels::KvSlot> slots,
                                           const float* keys, const float* values,
                                           const float* log_votes) {
  return Timed("WriteKvSlots",
               [&] { return inner_.WriteKvSlots(pool, slots, keys, values, log_votes); });
}

void OpTimingBackend::Attention(const kernels::Tensor& q, const kernels::KvPool& pool,
                                std::span<const kernels::SequenceKvRef> sequences,
                                const kernels::AttentionShape& shape, kernels::Tensor out) {
  Timed("Attention", [&] { inner_.Attention(q, pool, sequences, shape, out); });
}

void OpTimingBackend::TopLogits(const kernels::Tensor& logits, int32_t k,
                                std::span<const float> inverse_temperatures, float* values,
                                int32_t* ids, float* log_normalizers) {
  Timed("TopLogits", [&] {
    inner_.TopLogits(logits, k, inverse_temperatures, values, ids, log_normalizers);
  });
}

}  // namespace kvd::bench
