// What one scheduler step did: for tests, benchmarks and logs.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace kvd::scheduler {

struct StepReport {
  int32_t num_sequences = 0;           // sequences in the forward pass
  int32_t num_prefill_tokens = 0;      // prompt tokens, recomputation after preemption included
  int32_t num_decode_tokens = 0;       // one per decoding sequence
  int32_t num_compression_tokens = 0;  // document compression work
  int32_t top_logits = 0;              // returned per logit row: what its neediest sampler asks
  std::vector<uint64_t> preempted;     // requests whose sequence was preempted, in order
  std::vector<uint64_t> admitted;      // requests that left the queue for the first time, in order
  int32_t num_running = 0;             // after the step
  int32_t num_waiting = 0;             // after the step
  absl::Duration step_time;            // the whole step
  absl::Duration forward_time;         // the forward pass alone
};

}  // namespace kvd::scheduler
