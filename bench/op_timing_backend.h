// A Backend that runs another one and times each of its ops by name, so that a benchmark can say
// where a step's time goes: either the host's time inside each call (on a device backend, what
// queueing the op costs) or, synchronised, each op's whole time with the queue drained before
// and after it.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>

#include "kernels/backend.h"

namespace kvd::bench {

class OpTimingBackend final : public kernels::Backend {
 public:
  enum class Mode {
    kOff,           // the ops run untimed
    kHost,          // the time each call takes to return
    kSynchronized,  // the queue drained before the call, and the call timed until it drains
  };
  struct OpTime {
    int64_t calls = 0;
    double seconds = 0.0;
  };

  explicit OpTimingBackend(kernels::Backend& inner) : inner_(inner) {}

  void set_mode(Mode mode) { mode_ = mode; }
  // Forgets the times recorded so far.
  void Reset() { times_.clear(); }
  // By op name (the Backend method's).
  const std::map<std::string_view, OpTime>& times() const { return times_; }

  std::string_view name() const override { return inner_.name(); }
  std::string KernelSummary() const override { return inner_.KernelSummary(); }
  size_t MemoryBytes() const override { return inner_.MemoryBytes(); }
  absl::Status CheckKvCacheType(kernels::DType dtype) const override {
    return inner_.CheckKvCacheType(dtype);
  }
  absl::StatusOr<std::unique_ptr<kernels::DeviceBuffer>> Allocate(size_t bytes) override {
    return inner_.Allocate(bytes);
  }
  using kernels::Backend::PrepareWeight;
  absl::StatusOr<kernels::PreparedWeight> PrepareWeight(
      const kernels::Tensor& host, std::optional<kernels::DType> dtype) override {
    return inner_.PrepareWeight(host, dtype);
  }
  void CopyToHost(const kernels::Tensor& src, float* dst) override;
  void CopyFromHost(const float* src, kernels::Tensor dst) override;
  void GatherRows(const kernels::Tensor& table, std::span<const int32_t> indices,
                  kernels::Tensor out) override;
  void RmsNorm(const kernels::Tensor& x, const kernels::Tensor& weight, float eps,
               kernels::Tensor out) override;
  void Linear(const kernels::Tensor& x, const kernels::Tensor& weight,
              const kernels::Tensor* bias, kernels::Tensor out) override;
  void LinearGroup(const kernels::Tensor& x,
                   std::span<const kernels::Projection> projections) override;
  void GatedLinear(const kernels::Tensor& x, const kernels::Tensor& gate_weight,
                   const kernels::Tensor& up_weight, kernels::Tensor up,
                   kernels::Tensor out) override;
  void ApplyRope(kernels::Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                 std::span<const float> inv_freq) override;
  void SiluMul(const kernels::Tensor& gate, const kernels::Tensor& up,
               kernels::Tensor out) override;
  void Add(kernels::Tensor x, const kernels::Tensor& y) override;
  void AppendKv(const kernels::Tensor& k, const kernels::Tensor& v, const kernels::KvPool& pool,
                std::span<const kernels::SequenceKvRef> sequences) override;
  absl::Status CopyKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> src,
                           std::span<const kernels::KvSlot> dst) override;
  absl::Status ReadKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                           float* keys, float* values, float* log_votes) override;
  absl::Status WriteKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                            const float* keys, const float* values,
                            const float* log_votes) override;
  void Attention(const kernels::Tensor& q, const kernels::KvPool& pool,
                 std::span<const kernels::SequenceKvRef> sequences,
                 const kernels::AttentionShape& shape, kernels::Tensor out) override;
  void TopLogits(const kernels::Tensor& logits, int32_t k,
                 std::span<const float> inverse_temperatures, float* values, int32_t* ids,
                 float* log_normalizers) override;
  void Synchronize() override { inner_.Synchronize(); }
  absl::Status TakeError() override { return inner_.TakeError(); }

 private:
  // Runs `op` as the mode says, adding its time to `name`'s; returns what it returns.
  template <typename Op>
  auto Timed(std::string_view name, Op&& op);

  kernels::Backend& inner_;
  Mode mode_ = Mode::kOff;
  std::map<std::string_view, OpTime> times_;
};

}  // namespace kvd::bench
