#include "scheduler/config.h"

#include "absl/strings/str_cat.h"

namespace kvd::scheduler {

absl::Status SchedulerConfig::Validate() const {
  auto invalid = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("scheduler config: ", parts...));
  };
  if (max_num_seqs < 1) return invalid("max_num_seqs must be at least 1, got ", max_num_seqs);
  if (max_num_batched_tokens < max_num_seqs) {
    return invalid("max_num_batched_tokens (", max_num_batched_tokens,
                   ") must be at least max_num_seqs (", max_num_seqs,
                   ") so that every running sequence decodes in every step");
  }
  if (block_size < 1 || block_size > 1024) {
    return invalid("block_size must be in [1, 1024], got ", block_size);
  }
  if (!(kv_cache_memory_fraction >= 0.0 && kv_cache_memory_fraction <= 1.0)) {
    return invalid("kv_cache_memory_fraction must be in [0, 1], got ", kv_cache_memory_fraction);
  }
  if (kv_cache_dtype != kernels::DType::kF32 && kv_cache_dtype != kernels::DType::kBF16) {
    return invalid("kv_cache_dtype must be f32 or bf16, got ",
                   std::string(kernels::DTypeName(kv_cache_dtype)));
  }
  if (kv_cache_memory_fraction == 0.0 && kv_cache_bytes == 0) {
    return invalid("set kv_cache_bytes or kv_cache_memory_fraction");
  }
  if (!(admission_watermark >= 0.0 && admission_watermark <= 0.5)) {
    return invalid("admission_watermark must be in [0, 0.5], got ", admission_watermark);
  }
  if (max_queued_requests < 1) {
    return invalid("max_queued_requests must be at least 1, got ", max_queued_requests);
  }
  if (max_n < 1) return invalid("max_n must be at least 1, got ", max_n);
  if (compression_tokens_per_step < 1) {
    return invalid("compression_tokens_per_step must be at least 1, got ",
                   compression_tokens_per_step);
  }
  if (!(prefix_cache.max_pool_fraction > 0.0 && prefix_cache.max_pool_fraction <= 1.0)) {
    return invalid("prefix_cache.max_pool_fraction must be in (0, 1], got ",
                   prefix_cache.max_pool_fraction);
  }
  return absl::OkStatus();
}

}  // namespace kvd::scheduler
