// A backend that runs every op on another one, except that once told to, it holds the next
// RmsNorm (every forward pass runs one) until released: a scheduler step wedged on purpose, as
// a kernel that never returns would wedge it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>

#include "tests/support/forwarding_backend.h"

namespace kvd::test_support {

class StallingBackend final : public ForwardingBackend {
 public:
  explicit StallingBackend(std::unique_ptr<kernels::Backend> inner)
      : ForwardingBackend(std::move(inner)) {}

  // The next RmsNorm waits until Release.
  void StallNextOp() {
    std::lock_guard lock(mu_);
    armed_ = true;
  }
  // Whether an op is held within `timeout`.
  bool WaitUntilStalled(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [this] { return stalled_; });
  }
  // Lets the held op run.
  void Release() {
    std::lock_guard lock(mu_);
    stalled_ = false;
    changed_.notify_all();
  }

  void RmsNorm(const kernels::Tensor& x, const kernels::Tensor& weight, float eps,
               kernels::Tensor out) override {
    {
      std::unique_lock lock(mu_);
      if (armed_) {
        armed_ = false;
        stalled_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !stalled_; });
      }
    }
    ForwardingBackend::RmsNorm(x, weight, eps, out);
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool armed_ = false;    // the next RmsNorm stalls
  bool stalled_ = false;  // an RmsNorm is held
};

}  // namespace kvd::test_support
