// `kvd bench --speculative`: reads the question set (or uses random prompts), frames the
// documents as the server would for the model, runs bench::MeasureSpeculativeDecoding and prints
// its table.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "bench/speculative_bench.h"
#include "engine/model.h"

namespace kvd::server {

struct SpeculativeBenchRun {
  std::string model_dir;
  std::string questions_path;  // empty: random prompts
  size_t documents = 20;       // the first documents of the question set
  bench::SpeculativeBenchOptions options;
};

[[nodiscard]] absl::Status RunSpeculativeBench(const SpeculativeBenchRun& run,
                                               engine::Model& model);

}  // namespace kvd::server
