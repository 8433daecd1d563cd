// How often recent drafts were right, across every sequence: when almost none are (a model or a
// workload the drafter cannot predict), a sequence starts drafting only as a rare probe, so that
// short outputs, which never reach a long backoff of their own, stop paying for drafts.
// Thread: scheduler.
#pragma once

#include <cstdint>

namespace kvd::scheduler::internal {

class DraftAcceptance {
 public:
  // Draft tokens verified and, of them, kept.
  void Record(int64_t drafted, int64_t kept) {
    drafted_ += drafted;
    kept_ += kept;
    // The last few hundred draft tokens count; older ones fade by halves.
    while (drafted_ > kWindow) {
      drafted_ /= 2;
      kept_ /= 2;
    }
  }
  // Whether enough drafts were verified lately and under a tenth of them were kept.
  bool Poor() const { return drafted_ >= kEvidence && kept_ * 10 < drafted_; }

 private:
  static constexpr int64_t kWindow = 256;
  static constexpr int64_t kEvidence = 8;
  int64_t drafted_ = 0;
  int64_t kept_ = 0;
};

}  // namespace kvd::scheduler::internal
