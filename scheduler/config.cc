#include "scheduler/config.h"

#include "absl/strings/str_cat.h"

namespace kvd::scheduler {

absl::Status SchedulerConfig::Validate() const {
  if (auto status = base::CheckConfigKeys("scheduler", base::KeysOf(kSchedulerKeys), *this);
      !status.ok()) {
    return status;
  }
  if (auto status =
          base::CheckConfigKeys("prefix_cache", base::KeysOf(kPrefixCacheKeys), prefix_cache);
      !status.ok()) {
    return status;
  }
  if (auto status =
          base::CheckConfigKeys("speculative", base::KeysOf(kSpeculativeKeys), speculative);
      !status.ok()) {
    return status;
  }
  if (speculative.prompt_lookup_min > speculative.prompt_lookup_max) {
    return base::ConfigKeyError(
        "speculative.prompt_lookup_min",
        absl::StrCat("prompt_lookup_min (", speculative.prompt_lookup_min,
                     ") must be at most prompt_lookup_max (", speculative.prompt_lookup_max, ")"));
  }
  if ((speculative.method == SpeculativeMethod::kDraftModel) == speculative.model.empty()) {
    return base::ConfigKeyError("speculative.model",
                                "a draft model directory goes with method draft_model, and only "
                                "with it");
  }
  if (max_num_batched_tokens < max_num_seqs) {
    return base::ConfigKeyError(
        "scheduler.max_num_batched_tokens",
        absl::StrCat("max_num_batched_tokens (", max_num_batched_tokens,
                     ") must be at least max_num_seqs (", max_num_seqs,
                     ") so that every running sequence decodes in every step"));
  }
  if (kv_cache_memory_fraction == 0.0 && kv_cache_bytes == 0) {
    return base::ConfigKeyError("scheduler", "set kv_cache_bytes or kv_cache_memory_fraction");
  }
  return absl::OkStatus();
}

}  // namespace kvd::scheduler
