// Constrained decoding off the scheduler thread. A sequence's matcher advances past each sampled
// token, and the mask of the token after it is computed, on worker threads while the next
// step's forward pass runs; the scheduler thread only takes masks that are ready, so one
// tenant's constraint work (a fresh grammar's mask walks over a 128K vocabulary take tens of
// milliseconds) is never in every other sequence's step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/fair_workers.h"
#include "structured/constraint.h"
#include "structured/token_mask.h"

namespace kvd::scheduler::internal {

// One sequence's position in its constraint and the mask of its next token. Shared by the
// sequence (scheduler thread) and at most one worker at a time: the worker owns everything
// but `ready_` from ConstraintWorkers::Start until it sets `ready_`; the scheduler thread reads
// the rest only while ready().
class ConstrainedOutput {
 public:
  explicit ConstrainedOutput(std::shared_ptr<const structured::Constraint> constraint)
      : constraint_(std::move(constraint)) {}

  const std::shared_ptr<const structured::Constraint>& constraint() const { return constraint_; }
  // Whether the next token's mask (or the error that stopped it) is there to take.
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // The next token's mask. Requires ready(). ResourceExhausted when the constraint's state
  // space is spent; InvalidArgument when the token it advanced past was not allowed.
  const absl::StatusOr<std::shared_ptr<const structured::TokenMask>>& mask() const;
  // Worker seconds spent on the mask. Requires ready().
  double seconds() const;

 private:
  friend class ConstraintWorkers;

  // On a worker: the matcher (made on first use) past `token`, then the mask of what may
  // follow when at most `tokens_left` tokens may still be sampled.
  void Advance(std::optional<int32_t> token, int32_t tokens_left);

  const std::shared_ptr<const structured::Constraint> constraint_;
  std::optional<structured::ConstraintMatcher> matcher_;
  absl::StatusOr<std::shared_ptr<const structured::TokenMask>> mask_ =
      absl::FailedPreconditionError("no mask was asked for");
  double seconds_ = 0.0;
  std::atomic<bool> ready_ = true;  // nothing started
};

// The threads that advance constrained outputs. Queued work is taken from the tenants in turn
// (base::FairWorkers), and the threads run at a lower CPU priority than the forward pass.
class ConstraintWorkers {
 public:
  // `threads` 0: the work runs at once on the thread that starts it. `on_ready` runs on the
  // worker after each piece of work (it wakes the scheduler thread).
  ConstraintWorkers(int32_t threads, std::function<void()> on_ready);

  // Starts computing `output`'s next mask for `tenant`, after `token` when given (the token the
  // sequence sampled; none for its first). Requires output.ready().
  void Start(const std::string& tenant, std::shared_ptr<ConstrainedOutput> output,
             std::optional<int32_t> token, int32_t tokens_left);

 private:
  const std::function<void()> on_ready_;
  std::unique_ptr<base::FairWorkers> workers_;  // null with no threads
};

}  // namespace kvd::scheduler::internal
