#include "scheduler/internal/constrained_output.h"

#include <chrono>
#include <utility>

#include "base/check.h"

namespace kvd::scheduler::internal {
namespace {

// The workers' nice value: masks yield the cores to the forward pass, which every sequence
// waits on, and still progress on a busy machine.
constexpr int32_t kWorkerNice = 10;

}  // namespace

const absl::StatusOr<std::shared_ptr<const structured::TokenMask>>& ConstrainedOutput::mask()
    const {
  KVD_CHECK(ready());
  return mask_;
}

double ConstrainedOutput::seconds() const {
  KVD_CHECK(ready());
  return seconds_;
}

void ConstrainedOutput::Advance(std::optional<int32_t> token, int32_t tokens_left) {
  const auto start = std::chrono::steady_clock::now();
  if (!matcher_) matcher_.emplace(constraint_);
  absl::Status advanced = token ? matcher_->Accept(*token) : absl::OkStatus();
  if (advanced.ok()) {
    mask_ = matcher_->NextTokens(tokens_left);
  } else {
    mask_ = std::move(advanced);
  }
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ready_.store(true, std::memory_order_release);
}

ConstraintWorkers::ConstraintWorkers(int32_t threads, std::function<void()> on_ready)
    : on_ready_(std::move(on_ready)),
      workers_(threads > 0 ? std::make_unique<base::FairWorkers>(base::FairWorkers::Options{
                                 .threads = threads, .nice = kWorkerNice})
                           : nullptr) {}

void ConstraintWorkers::Start(const std::string& tenant, std::shared_ptr<ConstrainedOutput> output,
                              std::optional<int32_t> token, int32_t tokens_left) {
  KVD_CHECK(output->ready());
  output->ready_.store(false, std::memory_order_relaxed);
  if (workers_ == nullptr) {
    output->Advance(token, tokens_left);
    return;
  }
  const base::FairWorkers::PostResult posted =
      workers_->Post(tenant, [output = std::move(output), token, tokens_left, this] {
        output->Advance(token, tokens_left);
        on_ready_();
      });
  KVD_CHECK(posted == base::FairWorkers::PostResult::kPosted);
}

}  // namespace kvd::scheduler::internal
