#include "server/cli/bench_command.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/attention_bench.h"
#include "bench/compute_peak.h"
#include "bench/constraint_mask_bench.h"
#include "bench/document_bench.h"
#include "bench/keepkv_bench.h"
#include "bench/matmul_bench.h"
#include "bench/memory_bandwidth.h"
#include "bench/merge_selection_bench.h"
#include "bench/op_times.h"
#include "bench/prompt_attention_bench.h"
#include "bench/sampling_bench.h"
#include "bench/scheduler_throughput.h"
#include "bench/store_write_bench.h"
#include "bench/throughput.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "kernels/backend.h"
#include "kernels/dtype.h"
#include "server/cli/exit_status.h"
#include "server/cli/speculative_bench_run.h"
#include "server/cli/type_choices.h"
#include "structured/constraint_cache.h"
#include "text/tokenizer.h"

namespace kvd::server {
namespace {

struct BenchOptions {
  std::string model_dir = "models/kvd-tiny";
  std::string backend = "cpu";
  int32_t threads = 0;
  std::string dtype = "auto";
  std::string kv_cache_dtype = "f32";
  bench::ThroughputOptions throughput;
  bool scheduler = false;
  int32_t shared_prefix_tokens = 0;
  std::vector<int32_t> concurrency = {1, 8, 32, 64};
  bool documents = false;
  bench::DocumentBenchOptions document;
  bool keepkv = false;
  bench::KeepKvBenchOptions keepkv_options;
  bool sampling = false;
  bench::SamplingBenchOptions sampling_options;
  bool store_writes = false;
  bool matmul = false;
  bench::MatmulBenchOptions matmul_options;
  bool merge_selection = false;
  bench::MergeSelectionBenchOptions merge_selection_options;
  bool attention = false;
  bench::AttentionBenchOptions attention_options;
  bool prompt_attention = false;
  bench::PromptAttentionBenchOptions prompt_attention_options;
  bool op_times = false;
  bench::ConstraintMaskBenchOptions constraint_masks;
  std::string scheduler_json_schema;  // with --scheduler: measured constrained too
  std::string store_dir = std::filesystem::temp_directory_path().string();
  bench::StoreWriteBenchOptions store_options;
  bool speculative = false;
  SpeculativeBenchRun speculative_run;
};

void PrintPerturbationRows(const std::vector<bench::PerturbationRow>& rows) {
  std::printf(
      "| rule | budget | logit change, first step | mean | last quarter | KL | top-1 agree | "
      "merges | of which fell back | evictions "
      "|\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      "\n");
  for (const auto& row : rows) {
    const bench::Perturbation& p = row.result;
    std::printf("| %s | %.0f%% | %.4f | %.4f | %.4f | %.4f | %.1f%% | %lld | %lld | %lld |\n",
                row.label.c_str(), 100.0 * row.budget, p.first_step, p.mean, p.last_quarter, p.kl,
                100.0 * p.top1_agreement, static_cast<long long>(p.merges),
                static_cast<long long>(p.fallbacks), static_cast<long long>(p.evictions));
  }
}

absl::Status RunKeepKvBench(const BenchOptions& options, engine::Model& model) {
  auto tokenizer =
      text::Tokenizer::FromFile(std::filesystem::path(options.model_dir) / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();
  bench::KeepKvBenchOptions bench_options = options.keepkv_options;
  bench_options.seed = options.throughput.seed;
  auto result = bench::MeasureKeepKv(model, **tokenizer, bench_options);
  if (!result.ok()) return result.status();
  std::printf(
      "model %s, backend %s, keepkv: %d prompts of %d tokens the model wrote, %d teacher-forced "
      "decode steps after the compaction, against the full cache\n\n",
      options.model_dir.c_str(), options.backend.c_str(), bench_options.prompts,
      bench_options.prompt_tokens, bench_options.follow_steps);
  PrintPerturbationRows(result->methods);
  std::printf(
      "\nsweep of the defaults at budgets 20%% and 10%%, one parameter changed at a time:\n\n");
  PrintPerturbationRows(result->sweep);
  std::printf(
      "\nbatch of %d sequences, prompt %d tokens, %d generated each:\n\n| budget | decode tok/s "
      "| peak KV blocks | compressed fraction |\n|---|---:|---:|---:|\n",
      bench_options.batch_sequences, bench_options.batch_prompt_tokens,
      bench_options.batch_decode_tokens);
  for (const auto& batch : result->batch) {
    std::printf("| %s | %.1f | %d | %.3f |\n", batch.keepkv ? "10%" : "none",
                batch.decode_tokens_per_second, batch.peak_kv_blocks, batch.compressed_fraction);
  }
  return absl::OkStatus();
}

absl::Status RunDocumentBench(const BenchOptions& options, engine::Model& model) {
  bench::DocumentBenchOptions bench_options = options.document;
  bench_options.seed = options.throughput.seed;
  auto result = bench::MeasureDocuments(model, bench_options);
  if (!result.ok()) return result.status();
  std::printf(
      "model %s, backend %s, documents: prefix %d + document %d tokens, question %d tokens, "
      "KVzip chunks of %d tokens, %d tokens per step\n",
      options.model_dir.c_str(), options.backend.c_str(), result->prefix_tokens,
      result->document_tokens, result->question_tokens, bench_options.chunk_tokens,
      bench_options.max_num_batched_tokens);
  std::printf("\n| compression (kept ratio 1) | forward tokens | s |\n|---|---:|---:|\n");
  std::printf("| none: prefill | %lld | %.3f |\n",
              static_cast<long long>(result->prefill_work_tokens), result->prefill_seconds);
  std::printf("| kvzip: prefill + scoring | %lld | %.3f |\n",
              static_cast<long long>(result->kvzip_work_tokens), result->kvzip_seconds);
  std::printf("| scoring alone (kvzip - none) | %lld | %.3f |\n",
              static_cast<long long>(result->kvzip_work_tokens - result->prefill_work_tokens),
              result->scoring_seconds());
  std::printf(
      "\nscoring / prefill: %.2f\n",
      result->prefill_seconds > 0.0 ? result->scoring_seconds() / result->prefill_seconds : 0.0);
  std::printf("from scratch (prefix + document + question): TTFT %.1f ms\n",
              result->scratch_ttft_ms);
  std::printf(
      "\n| kept ratio | kept entries | stored bytes | TTFT cold ms | TTFT warm ms | cold / scratch "
      "| warm / scratch |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& row : result->ratios) {
    std::printf("| %.2f | %lld | %zu | %.1f | %.1f | %.3f%% | %.3f%% |\n", row.ratio,
                static_cast<long long>(row.kept_entries), row.stored_bytes, row.cold_ttft_ms,
                row.warm_ttft_ms, 100.0 * row.cold_ttft_ms / result->scratch_ttft_ms,
                100.0 * row.warm_ttft_ms / result->scratch_ttft_ms);
  }
  return absl::OkStatus();
}

absl::Status RunSchedulerBench(const BenchOptions& options, engine::Model& model) {
  const auto tokenizer_path = std::filesystem::path(options.model_dir) / "tokenizer.json";
  std::unique_ptr<text::Tokenizer> tokenizer;
  if (std::filesystem::exists(tokenizer_path)) {
    auto loaded = text::Tokenizer::FromFile(tokenizer_path);
    if (!loaded.ok()) return loaded.status();
    tokenizer = *std::move(loaded);
  }
  bench::SchedulerBenchOptions bench_options{.concurrency = options.concurrency,
                                             .prompt_tokens = options.throughput.prompt_tokens,
                                             .decode_tokens = options.throughput.decode_tokens,
                                             .shared_prefix_tokens = options.shared_prefix_tokens,
                                             .kv_cache_dtype = options.throughput.kv_cache_dtype,
                                             .seed = options.throughput.seed};
  if (!options.scheduler_json_schema.empty()) {
    if (tokenizer == nullptr) {
      return absl::FailedPreconditionError("--scheduler-json-schema needs the model's tokenizer");
    }
    std::ifstream file(options.scheduler_json_schema);
    const std::string schema((std::istreambuf_iterator<char>(file)), {});
    auto trie = structured::TokenTrie::Create(*tokenizer, model.config().eos_token_ids);
    if (!trie.ok()) return trie.status();
    structured::ConstraintCache constraints(*std::move(trie));
    auto constraint = constraints.Get({structured::ConstraintSpec::Kind::kJsonSchema, schema});
    if (!constraint.ok()) return constraint.status();
    bench_options.constraint = *std::move(constraint);
  }
  auto results = bench::MeasureSchedulerThroughput(model, tokenizer.get(), bench_options);
  if (!results.ok()) return results.status();
  std::printf(
      "model %s, backend %s, scheduler, kv cache %s, prompt %d tokens (%d shared), %d generated "
      "per request\n",
      options.model_dir.c_str(), options.backend.c_str(), options.kv_cache_dtype.c_str(),
      bench_options.prompt_tokens, bench_options.shared_prefix_tokens, bench_options.decode_tokens);
  std::printf(
      "| concurrent | prefix cache | constrained | prompt tokens computed | TTFT ms (mean%s) | "
      "decode tok/s | decode ms/step | outside forward | constraint share | total s |\n",
      bench_options.shared_prefix_tokens > 0 ? ", after the first" : "");
  std::printf("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& result : *results) {
    std::printf("| %d | %s | %s | %lld | %.1f | %.1f | %.2f | %.1f%% | %.2f%% | %.2f |\n",
                result.concurrency, result.prefix_cache ? "on" : "off",
                result.constrained ? "yes" : "no", static_cast<long long>(result.prefill_tokens),
                result.mean_ttft_ms, result.decode_tokens_per_second, result.decode_step_ms,
                100.0 * result.overhead_fraction, 100.0 * result.constraint_fraction,
                result.total_seconds);
  }
  return absl::OkStatus();
}

absl::Status RunSamplingBench(const BenchOptions& options, kernels::Backend& backend) {
  bench::SamplingBenchOptions bench_options = options.sampling_options;
  bench_options.batch_sizes = options.throughput.batch_sizes;
  bench_options.seed = options.throughput.seed;
  auto rows = bench::MeasureSampling(backend, bench_options);
  if (!rows.ok()) return rows.status();
  std::printf("backend %s, ", options.backend.c_str());
  bench::PrintSamplingTable(bench_options, *rows);
  return absl::OkStatus();
}

absl::Status RunMatmulBench(const BenchOptions& options) {
  bench::MatmulBenchOptions bench_options = options.matmul_options;
  bench_options.threads = options.threads;
  bench_options.dtype = kernels::DTypeFromName(options.dtype);
  auto result = bench::MeasureMatmul(bench_options);
  if (!result.ok()) return result.status();
  bench::PrintMatmulTable(bench_options, *result);
  return absl::OkStatus();
}

absl::Status RunAttentionBench(const BenchOptions& options) {
  bench::AttentionBenchOptions bench_options = options.attention_options;
  bench_options.threads = options.threads;
  bench_options.seed = options.throughput.seed;
  auto result = bench::MeasureAttention(bench_options);
  if (!result.ok()) return result.status();
  bench::PrintAttentionTable(bench_options, *result);
  return absl::OkStatus();
}

absl::Status RunPromptAttentionBench(const BenchOptions& options) {
  bench::PromptAttentionBenchOptions bench_options = options.prompt_attention_options;
  bench_options.seed = options.throughput.seed;
  auto rows = bench::MeasurePromptAttention(bench_options);
  if (!rows.ok()) return rows.status();
  bench::PrintPromptAttentionTable(bench_options, *rows);
  return absl::OkStatus();
}

absl::Status RunStoreWriteBench(const BenchOptions& options) {
  auto model = engine::LoadModelConfig(options.model_dir);
  if (!model.ok()) return model.status();
  bench::StoreWriteBenchOptions bench_options = options.store_options;
  bench_options.dir = std::filesystem::path(options.store_dir) /
                      absl::StrCat("kvd_store_bench_", static_cast<int64_t>(getpid()));
  bench_options.seed = options.throughput.seed;
  auto rows = bench::MeasureStoreWrites(*model, bench_options);
  if (!rows.ok()) return rows.status();
  std::printf(
      "model %s (geometry only), store writes of one upload (processing meta, then meta and "
      "payload), kept ratio %.2f, %d uploads per round, median of %d interleaved rounds, in %s\n",
      options.model_dir.c_str(), bench_options.ratio, bench_options.uploads, bench_options.rounds,
      options.store_dir.c_str());
  std::printf(
      "| document tokens | payload bytes | sync_writes | upload ms (median) | upload ms (p90) | "
      "uploads/s | MB/s |\n|---:|---:|---|---:|---:|---:|---:|\n");
  for (const auto& row : *rows) {
    std::printf("| %d | %lld | %s | %.3f | %.3f | %.1f | %.1f |\n", row.document_tokens,
                static_cast<long long>(row.payload_bytes), row.sync_writes ? "true" : "false",
                row.median_upload_ms, row.p90_upload_ms, row.uploads_per_second,
                row.megabytes_per_second);
  }
  return absl::OkStatus();
}

absl::Status RunOpTimesBench(const BenchOptions& options, kernels::Backend& backend) {
  bench::OpTimingBackend timing(backend);
  auto model = engine::Model::Load(options.model_dir, timing);
  if (!model.ok()) return model.status();
  auto results = bench::MeasureOpTimes(**model, timing, options.throughput);
  if (!results.ok()) return results.status();
  std::printf("model %s, backend %s, kv cache %s, prompt %d tokens, %d decode steps\n",
              options.model_dir.c_str(), options.backend.c_str(), options.kv_cache_dtype.c_str(),
              options.throughput.prompt_tokens, options.throughput.decode_tokens);
  bench::PrintOpTimes(*results);
  return absl::OkStatus();
}

absl::Status RunBench(const BenchOptions& options) {
  if (options.store_writes) return RunStoreWriteBench(options);
  if (options.matmul) return RunMatmulBench(options);
  if (options.attention) return RunAttentionBench(options);
  if (options.prompt_attention) return RunPromptAttentionBench(options);
  if (options.merge_selection) {
    bench::PrintMergeSelectionTable(options.merge_selection_options,
                                    bench::MeasureMergeSelection(options.merge_selection_options));
    return absl::OkStatus();
  }
  if (!options.constraint_masks.tokenizer_path.empty()) {
    const absl::StatusOr<bench::ConstraintMaskBenchResult> result =
        bench::MeasureConstraintMasks(options.constraint_masks);
    if (!result.ok()) return result.status();
    bench::PrintConstraintMaskTable(options.constraint_masks, *result);
    return absl::OkStatus();
  }
  auto backend = kernels::CreateBackend(
      options.backend,
      {.num_threads = options.threads, .weight_dtype = kernels::DTypeFromName(options.dtype)});
  if (!backend.ok()) return backend.status();
  std::printf("backend %s\n", (*backend)->KernelSummary().c_str());
  if (options.sampling) return RunSamplingBench(options, **backend);
  if (options.op_times) return RunOpTimesBench(options, **backend);
  auto model = engine::Model::Load(options.model_dir, **backend);
  if (!model.ok()) return model.status();
  if (options.documents) return RunDocumentBench(options, **model);
  if (options.keepkv) return RunKeepKvBench(options, **model);
  if (options.scheduler) return RunSchedulerBench(options, **model);
  if (options.speculative) {
    SpeculativeBenchRun run = options.speculative_run;
    run.model_dir = options.model_dir;
    run.options.batch_sizes = options.throughput.batch_sizes;
    run.options.prompt_tokens = options.throughput.prompt_tokens;
    run.options.max_tokens = options.throughput.decode_tokens;
    run.options.seed = options.throughput.seed;
    return RunSpeculativeBench(run, **model);
  }
  auto results = bench::MeasureThroughput(**model, options.throughput);
  if (!results.ok()) return results.status();
  // A decode step reads every weight once: its time against reading that many bytes at the
  // machine's measured bandwidth is the share of the memory roofline it reaches.
  const double step_bytes = static_cast<double>((*model)->weights().StepBytes());
  // Read now, with the weights and the KV pool resident: the huge pages they were given.
  const std::string resident = bench::ResidentMemoryNote();
  const absl::StatusOr<bench::ReadBandwidth> measured =
      bench::MeasureReadBandwidth(int64_t{1} << 30, options.threads);
  if (!measured.ok()) return measured.status();
  const double bandwidth = measured->gb_per_second;
  std::printf("model %s, backend %s, kv cache %s, prompt %d tokens, %d decode steps\n",
              options.model_dir.c_str(), options.backend.c_str(), options.kv_cache_dtype.c_str(),
              options.throughput.prompt_tokens, options.throughput.decode_tokens);
  std::printf(
      "weights read per step %.1f MB; measured read bandwidth %.1f GB/s (roofline %.1f "
      "steps/s; the read's buffer %s), STREAM triad %.1f GB/s\n",
      step_bytes / 1e6, bandwidth, bandwidth * 1e9 / step_bytes,
      bench::HugePageNote(measured->huge_page_share).c_str(), measured->triad_gb_per_second);
  std::printf("%s\n", resident.c_str());
  std::printf("a prompt token's work %.3f GFLOP; %s\n",
              bench::PromptTokenFlops((*model)->config(), options.throughput.prompt_tokens) / 1e9,
              bench::ComputePeakNote(bench::MeasureComputePeaks(options.threads)).c_str());
  std::printf(
      "| batch | prefill tok/s | prefill s | decode tok/s | decode ms/step | of roofline | "
      "of triad | prefill GFLOP/s |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& result : *results) {
    const double roofline_ms = step_bytes / (bandwidth * 1e9) * 1e3;
    const double triad_ms = step_bytes / (measured->triad_gb_per_second * 1e9) * 1e3;
    std::printf("| %d | %.1f | %.3f | %.1f | %.2f | %.0f%% | %.0f%% | %.1f |\n", result.batch_size,
                result.prefill_tokens_per_second, result.prefill_seconds,
                result.decode_tokens_per_second, result.decode_step_ms,
                100.0 * roofline_ms / result.decode_step_ms,
                100.0 * triad_ms / result.decode_step_ms, result.prefill_gflop_per_second);
  }
  return absl::OkStatus();
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command =
      app.add_subcommand("bench", "Measure prefill and decode throughput (tokens/s) of a model");
  command->add_option("--model", options->model_dir, "Model directory")->capture_default_str();
  command->add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads (0: all cores)")
      ->capture_default_str();
  command
      ->add_option("--dtype", options->dtype,
                   "Weight matrices in memory: auto (the checkpoint's), f32, bf16, f16, int8 or "
                   "int4; with --matmul, the one type measured (auto: every type)")
      ->check(CLI::IsMember(WeightTypeChoices()))
      ->capture_default_str();
  command
      ->add_option("--kv-cache-dtype", options->kv_cache_dtype,
                   "Cached keys and values: f32 or bf16 (the raw steps and --scheduler)")
      ->check(CLI::IsMember(KvCacheTypeChoices()))
      ->capture_default_str();
  command->add_option("--batch", options->throughput.batch_sizes, "Batch sizes to measure")
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--prompt-tokens", options->throughput.prompt_tokens,
                   "Prompt length per sequence")
      ->capture_default_str();
  command->add_option("--decode-tokens", options->throughput.decode_tokens, "Decode steps")
      ->capture_default_str();
  command->add_option("--seed", options->throughput.seed, "Seed of the random prompts")
      ->capture_default_str();
  command->add_flag("--scheduler", options->scheduler,
                    "Measure the serving scheduler (concurrent requests) instead of raw steps");
  command
      ->add_option("--shared-prefix-tokens", options->shared_prefix_tokens,
                   "With --scheduler: leading prompt tokens every request shares (a system "
                   "prompt); one request runs first, and each concurrency is measured with the "
                   "prefix cache on and off")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--scheduler-json-schema", options->scheduler_json_schema,
                   "With --scheduler: also measure every concurrency with each request's output "
                   "held to this JSON Schema (bench/structured_records.json never ends early)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--concurrency", options->concurrency,
                   "Concurrent requests to measure, with --scheduler")
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag("--documents", options->documents,
                    "Measure what a stored, compressed document buys: time to first token from "
                    "scratch, compression time, and time to first token over the stored cache");
  command
      ->add_option("--document-tokens", options->document.document_tokens,
                   "Document length, with --documents")
      ->capture_default_str();
  command
      ->add_option("--ratios", options->document.ratios,
                   "Kept ratios of the stored cache to measure, with --documents")
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag(
      "--keepkv", options->keepkv,
      "Measure KeepKV: logit perturbation after compaction per merge rule and budget, "
      "a parameter sweep, and batch throughput and memory at a 10% budget");
  command
      ->add_option("--keepkv-prompt-tokens", options->keepkv_options.prompt_tokens,
                   "Prompt length, with --keepkv")
      ->capture_default_str();
  command
      ->add_option("--keepkv-prompts", options->keepkv_options.prompts,
                   "Prompts averaged over, with --keepkv")
      ->capture_default_str();
  command
      ->add_option("--keepkv-steps", options->keepkv_options.follow_steps,
                   "Decode steps measured after the compaction, with --keepkv")
      ->capture_default_str();
  command->add_flag("--sampling", options->sampling,
                    "Measure turning logits into tokens: whole rows to the host against the rows' "
                    "top logits, per batch size (no model needed)");
  command
      ->add_option("--vocab", options->sampling_options.vocab_size,
                   "Vocabulary of the random logits, with --sampling")
      ->capture_default_str();
  command
      ->add_option("--zipf", options->sampling_options.zipf_exponent,
                   "Exponent of the logits' Zipf shape (larger: more peaked), with --sampling")
      ->capture_default_str();
  command->add_flag("--store-writes", options->store_writes,
                    "Measure the document store's writes of an upload with sync_writes on and off "
                    "(the model's geometry only; no model is loaded)");
  command
      ->add_option("--store-dir", options->store_dir,
                   "Directory on the disk to measure, with --store-writes")
      ->capture_default_str();
  command
      ->add_option("--store-tokens", options->store_options.document_tokens,
                   "Document lengths in tokens, with --store-writes")
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--store-uploads", options->store_options.uploads,
                   "Uploads per round, with --store-writes")
      ->capture_default_str();
  command
      ->add_option("--store-rounds", options->store_options.rounds,
                   "Rounds per setting, with --store-writes")
      ->capture_default_str();
  command->add_flag("--matmul", options->matmul,
                    "Measure the CPU projections kernel by kernel: each matmul variant and weight "
                    "type at several row counts, against the measured read bandwidth (no model)");
  command
      ->add_option("--matmul-rows", options->matmul_options.rows,
                   "Rows (tokens) per product, with --matmul")
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--matmul-out", options->matmul_options.out_features,
                   "Output features of the weight, with --matmul")
      ->capture_default_str();
  command
      ->add_option("--matmul-in", options->matmul_options.in_features,
                   "Input features of the weight, with --matmul")
      ->capture_default_str();
  command
      ->add_option("--matmul-mib", options->matmul_options.weight_mib,
                   "MiB of weights per type, with --matmul (more than the caches hold)")
      ->capture_default_str();
  command->add_flag("--attention", options->attention,
                    "Measure the CPU attention of one decode row per layer at several context "
                    "lengths, f32 and bf16 caches, against the measured read bandwidth (no model)");
  command
      ->add_option("--attention-entries", options->attention_options.entries,
                   "Context lengths (cached entries), with --attention")
      ->check(CLI::Range(1, 1 << 20))
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--attention-mib", options->attention_options.cache_mib,
                   "MiB of caches per length and type, with --attention (more than the caches "
                   "hold)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command->add_flag("--prompt-attention", options->prompt_attention,
                    "Measure the CPU attention of a chunk of prompt rows at one kv head, each "
                    "rows kernel this CPU runs, f32 and bf16 caches, one thread (no model)");
  command
      ->add_option("--prompt-attention-entries", options->prompt_attention_options.entries,
                   "Context lengths (entries the chunk's first row sees), with --prompt-attention")
      ->check(CLI::Range(1, 1 << 20))
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--prompt-attention-rows", options->prompt_attention_options.rows,
                   "Rows of a chunk, with --prompt-attention")
      ->check(CLI::Range(1, 4096))
      ->delimiter(',')
      ->capture_default_str();
  command->add_flag("--merge-selection", options->merge_selection,
                    "Measure how long choosing KeepKV's merges takes for one (layer, kv head), at "
                    "several entry counts (no model)");
  command
      ->add_option("--merge-selection-entries", options->merge_selection_options.entries,
                   "Entry counts, with --merge-selection")
      ->check(CLI::Range(2, 1 << 16))
      ->delimiter(',')
      ->capture_default_str();
  command
      ->add_option("--merge-selection-head-dim", options->merge_selection_options.head_dim,
                   "Dimensions of a head, with --merge-selection")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  command
      ->add_option("--constraint-masks", options->constraint_masks.tokenizer_path,
                   "Measure constrained decoding's host cost over this tokenizer.json: compiling "
                   "JSON constraints and each step's token mask along random walks (no model)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--constraint-walks", options->constraint_masks.walks,
                   "Random walks per constraint, with --constraint-masks")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command->add_flag("--speculative", options->speculative,
                    "Measure speculative decoding (ngram drafts, or --draft-model): the same "
                    "requests without "
                    "and with drafts, in interleaved rounds, at each --batch; --decode-tokens is "
                    "each request's max_tokens");
  SpeculativeBenchRun& speculative = options->speculative_run;
  command
      ->add_option("--questions", speculative.questions_path,
                   "With --speculative: questions about documents, JSON Lines of {\"doc\", "
                   "\"queries\": [{\"prompt\"}]} (a model's question set); without it, random "
                   "prompts")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--questions-documents", speculative.documents,
                   "With --questions: how many of its documents to ask about")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--stop", speculative.options.stop,
                   "With --questions: stop strings of every question")
      ->each([](const std::string& stop) {
        if (stop.empty()) throw CLI::ValidationError("--stop", "a stop string may not be empty");
      });
  command
      ->add_option("--random-requests", speculative.options.random_requests,
                   "With --speculative and no --questions: how many random prompts")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  command
      ->add_option("--random-vocab", speculative.options.prompt_vocab,
                   "With --speculative and no --questions: draw prompt ids from the first N of "
                   "the vocabulary (0: all); a few make prompts repeat, so drafts are tried")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--draft-model", speculative.options.speculative.model,
                   "With --speculative: draft with this model (same vocabulary and head size, "
                   "e.g. from make_draft_model) instead of n-grams")
      ->check(CLI::ExistingDirectory);
  command
      ->add_option("--draft-dtype", speculative.options.speculative.dtype,
                   "With --draft-model: its weights' type (auto: as the served model's)")
      ->check(CLI::IsMember(std::vector<std::string>(kernels::kWeightTypeChoices.begin(),
                                                     kernels::kWeightTypeChoices.end())))
      ->capture_default_str();
  command
      ->add_option("--temperature", speculative.options.temperature,
                   "With --speculative: sample at this temperature, each request seeded (0: "
                   "greedy)")
      ->check(CLI::Range(0.0, 2.0))
      ->capture_default_str();
  command
      ->add_option("--disable-by-batch-size", speculative.options.speculative.disable_by_batch_size,
                   "With --speculative: no drafts while more sequences than this run (0: no "
                   "limit)")
      ->check(CLI::Range(0, 65536))
      ->capture_default_str();
  command
      ->add_option("--draft-tokens", speculative.options.speculative.num_speculative_tokens,
                   "With --speculative: draft tokens per sequence and step")
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  command
      ->add_option("--lookup-min", speculative.options.speculative.prompt_lookup_min,
                   "With --speculative: the shortest n-gram matched")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command
      ->add_option("--lookup-max", speculative.options.speculative.prompt_lookup_max,
                   "With --speculative: the longest n-gram matched")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command
      ->add_option("--rounds", speculative.options.rounds,
                   "With --speculative: interleaved rounds of each measurement")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  command->add_flag("--op-times", options->op_times,
                    "Measure where a decode step's time goes, op by op: the host's time in each "
                    "backend call, and each op's time with the backend's queue drained around it");
  // One measurement a run: each of them excludes every other.
  const char* const measurements[] = {"--scheduler",       "--documents",    "--keepkv",
                                      "--sampling",        "--store-writes", "--matmul",
                                      "--merge-selection", "--op-times",     "--constraint-masks",
                                      "--attention",       "--speculative",  "--prompt-attention"};
  for (const char* a : measurements) {
    for (const char* b : measurements) {
      if (a != b) command->get_option(a)->excludes(command->get_option(b));
    }
  }
  command->callback([options] {
    // The flag's check admits only names of cache types.
    options->throughput.kv_cache_dtype = *kernels::DTypeFromName(options->kv_cache_dtype);
    ExitWith(RunBench(*options));
  });
}

}  // namespace kvd::server
