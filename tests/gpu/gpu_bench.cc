// The device check's benchmark, printed as markdown tables: prefill and decode throughput of a
// model on the CUDA backend at several batch sizes, each decode step set against its memory floor
// (every weight and each sequence's KV read once, at the HBM bandwidth given) and against the
// time its logits take to reach the host; then KVzip's scoring of a document against its prefill.
// With --keepkv instead: a batch's decode throughput with KeepKV at a 10% budget against none,
// and how much of each run the host spends in which backend calls.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/keepkv_bench.h"
#include "bench/op_times.h"
#include "bench/sampling_bench.h"
#include "bench/throughput.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/gpu/kvzip_timing.h"

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

// Median time of bringing a decode step's logits ([batch, vocab] f32) to the host as
// Model::Forward does: into a reused vector, cleared and resized, by CopyToHost.
absl::StatusOr<double> LogitsToHostMs(kvd::kernels::Backend& backend, int32_t batch,
                                      int32_t vocab_size) {
  constexpr int kCopies = 20;
  const size_t count = static_cast<size_t>(batch) * vocab_size;
  auto buffer = backend.Allocate(count * sizeof(float));
  if (!buffer.ok()) return buffer.status();
  const kvd::kernels::Tensor logits{(*buffer)->data(), kvd::kernels::DType::kF32, batch,
                                    vocab_size};
  std::vector<float> host;
  std::vector<double> ms;
  // The first copy is a warm-up: it faults the vector's pages in, which a serving loop does once.
  for (int i = 0; i <= kCopies; ++i) {
    const auto start = std::chrono::steady_clock::now();
    host.clear();
    host.resize(count);
    backend.CopyToHost(logits, host.data());
    if (i > 0) {
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  if (auto status = backend.TakeError(); !status.ok()) return status;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
}

// The KeepKV batch without a budget, then with 10%, each printed as it ends (so that a run cut
// short keeps the first) with the host's time in each backend call over the whole run.
int RunKeepKv(kvd::engine::Model& model, kvd::bench::OpTimingBackend& timing,
              const std::string& dtype, kvd::bench::KeepKvBenchOptions options) {
  const kvd::engine::ModelConfig& config = model.config();
  // The pool holds every sequence whole (f32 keys and values), with a quarter to spare.
  const double tokens = static_cast<double>(options.batch_sequences) *
                        (options.batch_prompt_tokens + options.batch_decode_tokens);
  options.batch_kv_cache_bytes = static_cast<size_t>(
      1.25 * tokens * 2.0 * config.num_layers * config.num_kv_heads * config.head_dim * 4.0);
  std::printf("%s weights, KeepKV: batch %d, prompt %d tokens, %d decode steps\n", dtype.c_str(),
              options.batch_sequences, options.batch_prompt_tokens, options.batch_decode_tokens);
  double unbounded_tokens_per_second = 0.0;
  for (bool bounded : {false, true}) {
    timing.Reset();
    timing.set_mode(kvd::bench::OpTimingBackend::Mode::kHost);
    const auto start = std::chrono::steady_clock::now();
    auto row = kvd::bench::MeasureKeepKvBatch(model, nullptr, options, bounded);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    timing.set_mode(kvd::bench::OpTimingBackend::Mode::kOff);
    if (!row.ok()) return Fail(row.status());
    if (!bounded) unbounded_tokens_per_second = row->decode_tokens_per_second;
    double in_calls = 0.0;
    for (const auto& [op, time] : timing.times()) in_calls += time.seconds;
    std::printf(
        "\nbudget %s: decode %.0f tok/s (%.0f%% of none), peak %d KV blocks, compressed "
        "fraction %.3f; the run %.2f s, of which in backend calls %.2f s\n\n| op | calls | host "
        "s |\n|---|---:|---:|\n",
        bounded ? "10%" : "none", row->decode_tokens_per_second,
        100.0 * row->decode_tokens_per_second / unbounded_tokens_per_second, row->peak_kv_blocks,
        row->compressed_fraction, seconds, in_calls);
    for (const auto& [op, time] : timing.times()) {
      std::printf("| %.*s | %lld | %.3f |\n", static_cast<int>(op.size()), op.data(),
                  static_cast<long long>(time.calls), time.seconds);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Prefill, decode and KVzip scoring on the CUDA backend against their floors");
  std::string model_dir;
  std::vector<int32_t> batches = {1, 16, 64};
  kvd::bench::ThroughputOptions options;
  options.prompt_tokens = 512;
  options.decode_tokens = 32;
  kvd::bench::KvzipTimingOptions kvzip;
  double bandwidth_tbs = 4.8;
  std::string dtype = "bf16";
  app.add_option("--model", model_dir, "Model directory")->required();
  app.add_option("--batch", batches, "Batch sizes")->delimiter(',')->capture_default_str();
  app.add_option("--prompt-tokens", options.prompt_tokens)->capture_default_str();
  app.add_option("--decode-tokens", options.decode_tokens)->capture_default_str();
  app.add_option("--document-tokens", kvzip.document_tokens, "KVzip-scored document's length")
      ->capture_default_str();
  app.add_option("--bandwidth-tbs", bandwidth_tbs, "HBM bandwidth, TB/s")->capture_default_str();
  bool sampling = false;
  app.add_flag("--sampling", sampling,
               "Also measure logits to tokens: whole rows against top logits per batch size");
  app.add_option("--dtype", dtype, "Weight matrices on the device: bf16, f16 or f32")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}))
      ->capture_default_str();
  bool op_times = false;
  app.add_flag("--op-times", op_times,
               "Also measure where a decode step's time goes, op by op (host calls against each "
               "op synchronised)");
  bool keepkv = false;
  kvd::bench::KeepKvBenchOptions keepkv_options;
  keepkv_options.batch_sequences = 64;
  keepkv_options.batch_prompt_tokens = 512;
  keepkv_options.batch_decode_tokens = 32;
  app.add_flag("--keepkv", keepkv,
               "Measure instead a batch's decode throughput with KeepKV at a 10% budget against "
               "none");
  app.add_option("--keepkv-batch", keepkv_options.batch_sequences, "Sequences, with --keepkv")
      ->capture_default_str();
  app.add_option("--keepkv-prompt-tokens", keepkv_options.batch_prompt_tokens,
                 "Prompt length, with --keepkv")
      ->capture_default_str();
  app.add_option("--keepkv-decode-tokens", keepkv_options.batch_decode_tokens,
                 "Tokens generated per sequence, with --keepkv")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.batch_sizes = batches;

  auto backend =
      kvd::kernels::CreateBackend("cuda", {.weight_dtype = kvd::kernels::DTypeFromName(dtype)});
  if (!backend.ok()) return Fail(backend.status());
  // Untimed unless --op-times measures: each op then passes one more virtual call.
  kvd::bench::OpTimingBackend timing(**backend);
  auto model = kvd::engine::Model::Load(model_dir, timing);
  if (!model.ok()) return Fail(model.status());
  if (keepkv) return RunKeepKv(**model, timing, dtype, keepkv_options);
  auto results = kvd::bench::MeasureThroughput(**model, options);
  if (!results.ok()) return Fail(results.status());
  const auto& config = (*model)->config();
  std::printf("%s weights, prompt %d tokens, %d decode steps, floor at %.1f TB/s\n\n",
              dtype.c_str(), options.prompt_tokens, options.decode_tokens, bandwidth_tbs);
  std::printf(
      "| batch | prefill tok/s | decode tok/s | decode ms/step | logits to host ms | of the step "
      "| floor ms/step | of the floor |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : *results) {
    auto logits_ms = LogitsToHostMs(**backend, r.batch_size, config.vocab_size);
    if (!logits_ms.ok()) return Fail(logits_ms.status());
    const int64_t context = options.prompt_tokens + options.decode_tokens / 2;
    const double floor_ms =
        DecodeStepBytes(config, r.batch_size, context, dtype == "f32" ? 4.0 : 2.0) /
        (bandwidth_tbs * 1e12) * 1e3;
    std::printf("| %d | %.0f | %.0f | %.3f | %.3f | %.0f%% | %.3f | %.0f%% |\n", r.batch_size,
                r.prefill_tokens_per_second, r.decode_tokens_per_second, r.decode_step_ms,
                *logits_ms, 100.0 * *logits_ms / r.decode_step_ms, floor_ms,
                100.0 * floor_ms / r.decode_step_ms);
  }
  // Printed before the KVzip run, so that a run cut short still shows it.
  std::fflush(stdout);

  if (sampling) {
    kvd::bench::SamplingBenchOptions sampling_options;
    sampling_options.batch_sizes = batches;
    sampling_options.vocab_size = config.vocab_size;
    sampling_options.steps = 5;  // the host sorts whole rows for the draws they decide
    auto rows = kvd::bench::MeasureSampling(**backend, sampling_options);
    if (!rows.ok()) return Fail(rows.status());
    std::printf("\n");
    kvd::bench::PrintSamplingTable(sampling_options, *rows);
    std::fflush(stdout);
  }

  if (op_times) {
    kvd::bench::ThroughputOptions op_options = options;
    op_options.decode_tokens = 8;
    auto op_results = kvd::bench::MeasureOpTimes(**model, timing, op_options);
    if (!op_results.ok()) return Fail(op_results.status());
    std::printf("\n%s weights, op times, prompt %d tokens, %d decode steps\n", dtype.c_str(),
                op_options.prompt_tokens, op_options.decode_tokens);
    kvd::bench::PrintOpTimes(*op_results);
  }

  auto scoring = kvd::bench::MeasureKvzipScoring(**model, kvzip);
  if (!scoring.ok()) return Fail(scoring.status());
  std::printf(
      "\n%s weights, KVzip scoring: prefix %d tokens, chunks of %d, %d tokens per step, median "
      "of %d\n\n",
      dtype.c_str(), kvzip.prefix_tokens, kvzip.chunk_tokens, kvzip.max_num_batched_tokens,
      kvzip.repeats);
  std::printf(
      "| document tokens | prefill ms | scoring tokens | scoring ms | scoring / prefill | select "
      "+ read-out ms |\n|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| %d | %.1f | %lld | %.1f | %.2f | %.1f |\n", kvzip.document_tokens,
              scoring->prefill_ms, static_cast<long long>(scoring->scoring_tokens),
              scoring->scoring_ms, scoring->scoring_ms / scoring->prefill_ms, scoring->finish_ms);
  return 0;
}
