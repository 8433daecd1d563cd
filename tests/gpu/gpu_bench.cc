// The device check's benchmark: prefill and decode throughput of a model on the CUDA backend at
// several batch sizes, each decode step set against its memory floor (every weight and each
// sequence's KV read once, at the HBM bandwidth given), printed as a markdown table.
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/throughput.h"
#include "engine/model.h"
#include "kernels/backend.h"

namespace {

// Bytes a decode step must read at least: every weight (the embedding again as the LM head
// when tied) at `weight_bytes` each, and each sequence's keys and values in f32.
double DecodeStepBytes(const kvd::engine::ModelConfig& c, int64_t batch, int64_t context,
                       double weight_bytes) {
  const double layer = static_cast<double>(c.hidden_size) * c.num_heads * c.head_dim * 2 +
                       static_cast<double>(c.hidden_size) * c.num_kv_heads * c.head_dim * 2 +
                       3.0 * c.hidden_size * c.intermediate_size;
  const double weights = layer * c.num_layers + static_cast<double>(c.vocab_size) * c.hidden_size;
  const double kv = 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * context;
  return weight_bytes * weights + 4.0 * kv * batch;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Prefill and decode throughput on the CUDA backend against the memory floor");
  std::string model_dir;
  std::vector<int32_t> batches = {1, 16, 64};
  kvd::bench::ThroughputOptions options;
  options.prompt_tokens = 512;
  options.decode_tokens = 32;
  double bandwidth_tbs = 4.8;
  std::string dtype = "bf16";
  app.add_option("--model", model_dir, "Model directory")->required();
  app.add_option("--batch", batches, "Batch sizes")->delimiter(',')->capture_default_str();
  app.add_option("--prompt-tokens", options.prompt_tokens)->capture_default_str();
  app.add_option("--decode-tokens", options.decode_tokens)->capture_default_str();
  app.add_option("--bandwidth-tbs", bandwidth_tbs, "HBM bandwidth, TB/s")->capture_default_str();
  app.add_option("--dtype", dtype, "Weight matrices on the device: bf16 or f32")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.batch_sizes = batches;

  auto backend =
      kvd::kernels::CreateBackend("cuda", {.weight_dtype = kvd::kernels::DTypeFromName(dtype)});
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  auto model = kvd::engine::Model::Load(model_dir, **backend);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  auto results = kvd::bench::MeasureThroughput(**model, options);
  if (!results.ok()) {
    std::fprintf(stderr, "%s\n", results.status().ToString().c_str());
    return 1;
  }
  const auto& config = (*model)->config();
  std::printf("%s weights, prompt %d tokens, %d decode steps, floor at %.1f TB/s\n\n",
              dtype.c_str(), options.prompt_tokens, options.decode_tokens, bandwidth_tbs);
  std::printf(
      "| batch | prefill tok/s | decode tok/s | decode ms/step | floor ms/step | of the floor "
      "|\n|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : *results) {
    const int64_t context = options.prompt_tokens + options.decode_tokens / 2;
    const double floor_ms =
        DecodeStepBytes(config, r.batch_size, context, dtype == "bf16" ? 2.0 : 4.0) /
        (bandwidth_tbs * 1e12) * 1e3;
    std::printf("| %d | %.0f | %.0f | %.3f | %.3f | %.0f%% |\n", r.batch_size,
                r.prefill_tokens_per_second, r.decode_tokens_per_second, r.decode_step_ms, floor_ms,
                100.0 * floor_ms / r.decode_step_ms);
  }
  return 0;
}
