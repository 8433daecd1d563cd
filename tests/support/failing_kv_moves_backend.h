// A backend that runs every op on another one but fails its KV moves (CopyKvSlots,
// ReadKvSlots, WriteKvSlots) with a given error, as a device that lost a copy would: for tests
// that the callers of the moves report the failure where it happens and leak nothing.
#pragma once

#include <memory>
#include <utility>

#include "tests/support/forwarding_backend.h"

namespace kvd::test_support {

class FailingKvMovesBackend final : public ForwardingBackend {
 public:
  FailingKvMovesBackend(std::unique_ptr<kernels::Backend> inner, absl::Status failure)
      : ForwardingBackend(std::move(inner)), failure_(std::move(failure)) {}

  // The moves succeed until this is set.
  void set_failing(bool failing) { failing_ = failing; }

  absl::Status CopyKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> src,
                           std::span<const kernels::KvSlot> dst) override {
    return failing_ ? failure_ : ForwardingBackend::CopyKvSlots(pool, src, dst);
  }
  absl::Status ReadKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                           float* keys, float* values, float* log_votes) override {
    return failing_ ? failure_
                    : ForwardingBackend::ReadKvSlots(pool, slots, keys, values, log_votes);
  }
  absl::Status WriteKvSlots(const kernels::KvPool& pool, std::span<const kernels::KvSlot> slots,
                            const float* keys, const float* values,
                            const float* log_votes) override {
    return failing_ ? failure_
                    : ForwardingBackend::WriteKvSlots(pool, slots, keys, values, log_votes);
  }

 private:
  absl::Status failure_;
  bool failing_ = false;
};

}  // namespace kvd::test_support
