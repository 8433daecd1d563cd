#include "scheduler/internal/compression_jobs.h"

#include <algorithm>

#include "cache_store/kvzip/compression_spec.h"
#include "spdlog/spdlog.h"

namespace kvd::scheduler::internal {

void CompressionJobs::Add(std::unique_ptr<cache_store::DocumentCompressor> compressor,
                          std::shared_ptr<CompressionChannel> channel) {
  jobs_.push_back({std::move(compressor), std::move(channel)});
}

void CompressionJobs::End(Job& job, absl::StatusOr<cache_store::DocumentPayload> result) {
  job.compressor->Release(pool_);
  job.channel->Finish(std::move(result));
}

int64_t CompressionJobs::NextBlocksWanted() const {
  if (jobs_.empty()) return 0;
  const auto started = std::find_if(jobs_.begin(), jobs_.end(),
                                    [](const Job& job) { return job.started.has_value(); });
  const cache_store::DocumentCompressor& next =
      *(started != jobs_.end() ? *started : jobs_.front()).compressor;
  return std::max<int64_t>(0, next.PeakBlocks(pool_.block_size()) - next.HeldBlocks());
}

int64_t CompressionJobs::HeldBlocks() const {
  int64_t held = 0;
  for (const Job& job : jobs_) held += job.compressor->HeldBlocks();
  return held;
}

void CompressionJobs::DropCancelled() {
  for (Job& job : jobs_) {
    if (job.channel->cancelled()) End(job, absl::CancelledError("the compression was cancelled"));
  }
  std::erase_if(jobs_, [](const Job& job) { return job.channel->cancelled(); });
}

int32_t CompressionJobs::Plan(int32_t budget, int64_t keep_free, bool may_start, absl::Time now,
                              std::vector<engine::SequenceStep>& steps) {
  int32_t planned = 0;
  // One compression at a time holds blocks: two half-done ones could each wait forever for
  // blocks the other holds. Jobs start in arrival order as the one before them ends.
  bool one_started = std::any_of(jobs_.begin(), jobs_.end(),
                                 [](const Job& job) { return job.started.has_value(); });
  for (Job& job : jobs_) {
    if (budget - planned <= 0) break;
    // Beside running sequences, only while more than their margin stays free; alone, it asks
    // (a part may need no new block, and a part that finds none plans nothing).
    if (keep_free > 0 && pool_.num_free_blocks() <= keep_free) break;
    if (!job.started && (one_started || !may_start)) break;
    const absl::StatusOr<int32_t> count = job.compressor->Plan(budget - planned, pool_, steps);
    if (!count.ok()) {
      End(job, count.status());
      job.ended = true;
      continue;
    }
    job.planned = *count > 0;
    planned += *count;
    if (job.planned && !job.started) {
      job.started = now;
      one_started = true;
      spdlog::info("document compression started: method={} tokens={} work={} tokens",
                   cache_store::CompressionMethodName(job.compressor->spec().method),
                   job.compressor->input().length(), job.compressor->total_tokens());
    }
  }
  std::erase_if(jobs_, [](const Job& job) { return job.ended; });
  return planned;
}

void CompressionJobs::Commit(absl::Time now) {
  for (Job& job : jobs_) {
    if (!job.planned) continue;
    job.planned = false;
    cache_store::DocumentCompressor& compressor = *job.compressor;
    compressor.Commit(pool_);
    job.channel->SetProgress(static_cast<double>(compressor.done_tokens()) /
                             static_cast<double>(compressor.total_tokens()));
    if (!compressor.scored()) continue;
    absl::StatusOr<cache_store::DocumentPayload> payload = compressor.Finish(pool_);
    spdlog::info("document compressed: method={} tokens={} kept={} in {:.3f}s",
                 cache_store::CompressionMethodName(compressor.spec().method),
                 compressor.input().length(), payload.ok() ? payload->kept_entries() : 0,
                 absl::ToDoubleSeconds(now - *job.started));
    End(job, std::move(payload));
  }
  std::erase_if(jobs_, [](const Job& job) { return job.compressor->scored(); });
}

void CompressionJobs::FailPlanned(const absl::Status& status) {
  for (Job& job : jobs_) {
    if (job.planned) End(job, status);
  }
  std::erase_if(jobs_, [](const Job& job) { return job.planned; });
}

void CompressionJobs::FailAll(const absl::Status& status) {
  for (Job& job : jobs_) End(job, status);
  jobs_.clear();
}

}  // namespace kvd::scheduler::internal
