// Document compressions waiting for or taking part in steps: each step they get the token
// budget the live requests leave (and a guaranteed share). One runs at a time, in arrival
// order, so two never wait on each other's blocks.
// Thread: scheduler.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cache_store/kvzip/document_compressor.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "scheduler/internal/compression_channel.h"

namespace kvd::scheduler::internal {

class CompressionJobs {
 public:
  explicit CompressionJobs(engine::KvBlockPool& pool) : pool_(pool) {}

  void Add(std::unique_ptr<cache_store::DocumentCompressor> compressor,
           std::shared_ptr<CompressionChannel> channel);
  bool empty() const { return jobs_.empty(); }
  // Blocks the compression that runs next (the one started, else the first) may still take: its
  // peak less what it holds. 0 with none.
  int64_t NextBlocksWanted() const;
  // Blocks the compressions hold now.
  int64_t HeldBlocks() const;
  int32_t size() const { return static_cast<int32_t>(jobs_.size()); }

  // Ends cancelled jobs (result Cancelled) and frees their blocks.
  void DropCancelled();
  // Adds the running job's next part to `steps` (starting the next job when none runs and
  // `may_start`), at most `budget` tokens, while more than `keep_free` blocks stay free; a job's
  // clock starts with its first part (`now`). Returns the tokens planned. A job whose part could
  // not be set up (the backend failed to copy its entries) ends with that error.
  int32_t Plan(int32_t budget, int64_t keep_free, bool may_start, absl::Time now,
               std::vector<engine::SequenceStep>& steps);
  // After the planned parts ran: records them, and finishes the jobs that are done.
  void Commit(absl::Time now);
  // After the planned parts failed: ends those jobs with `status`.
  void FailPlanned(const absl::Status& status);
  // Ends every job with `status`.
  void FailAll(const absl::Status& status);

 private:
  struct Job {
    std::unique_ptr<cache_store::DocumentCompressor> compressor;
    std::shared_ptr<CompressionChannel> channel;
    bool planned = false;
    bool ended = false;
    std::optional<absl::Time> started;
  };
  void End(Job& job, absl::StatusOr<cache_store::DocumentPayload> result);

  engine::KvBlockPool& pool_;
  std::deque<Job> jobs_;
};

}  // namespace kvd::scheduler::internal
