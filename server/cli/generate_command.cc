#include "server/cli/generate_command.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <variant>

#include "absl/strings/str_cat.h"
#include "engine/model.h"
#include "engine/sampling_fields.h"
#include "kernels/backend.h"
#include "scheduler/scheduler.h"
#include "server/cli/exit_status.h"
#include "server/cli/type_choices.h"
#include "spdlog/spdlog.h"
#include "text/tokenizer.h"

namespace kvd::server {
namespace {

struct GenerateOptions {
  std::string model_dir = "models/kvd-tiny";
  std::string prompt;
  std::string prompt_file;
  bool no_special_tokens = false;
  std::string backend = "cpu";
  int32_t threads = 0;
  std::string dtype = "auto";
  int32_t max_tokens = 128;
  int32_t min_tokens = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;
  std::vector<std::string> logit_bias;  // TOKEN=BIAS
  engine::SamplingParams sampling;
};

absl::StatusOr<std::string> ReadPrompt(const GenerateOptions& options) {
  if (!options.prompt.empty() && !options.prompt_file.empty()) {
    return absl::InvalidArgumentError("give either --prompt or --prompt-file, not both");
  }
  if (options.prompt_file.empty()) {
    if (options.prompt == "-") {
      return std::string(std::istreambuf_iterator<char>(std::cin), {});
    }
    return options.prompt;
  }
  if (options.prompt_file == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(options.prompt_file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(options.prompt_file, ": cannot open"));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::Status ParseLogitBias(const std::vector<std::string>& entries,
                            engine::SamplingParams& sampling) {
  for (const std::string& entry : entries) {
    const size_t equals = entry.find('=');
    try {
      if (equals == std::string::npos) throw std::invalid_argument(entry);
      sampling.logit_bias.emplace_back(std::stoi(entry.substr(0, equals)),
                                       std::stof(entry.substr(equals + 1)));
    } catch (const std::exception&) {
      return absl::InvalidArgumentError(
          absl::StrCat("--logit-bias '", entry, "': expected TOKEN_ID=BIAS"));
    }
  }
  return absl::OkStatus();
}

absl::Status RunGenerate(GenerateOptions options) {
  auto prompt = ReadPrompt(options);
  if (!prompt.ok()) return prompt.status();
  if (auto status = ParseLogitBias(options.logit_bias, options.sampling); !status.ok()) {
    return status;
  }
  auto backend = kernels::CreateBackend(
      options.backend,
      {.num_threads = options.threads, .weight_dtype = kernels::DTypeFromName(options.dtype)});
  if (!backend.ok()) return backend.status();
  auto model = engine::Model::Load(options.model_dir, **backend);
  if (!model.ok()) return model.status();
  auto tokenizer =
      text::Tokenizer::FromFile(std::filesystem::path(options.model_dir) / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();

  scheduler::Request request;
  request.prompt = (*tokenizer)->Encode(*prompt, !options.no_special_tokens);
  request.sampling = options.sampling;
  request.max_tokens = options.max_tokens;
  request.min_tokens = options.min_tokens;
  request.ignore_eos = options.ignore_eos;
  request.stop_token_ids = options.stop_token_ids;
  request.stop = options.stop;
  spdlog::info("prompt: {} tokens", request.prompt.size());

  // A KV cache with room for this one generation; the scheduler refuses what cannot fit.
  const engine::ModelConfig& config = (*model)->config();
  scheduler::SchedulerConfig scheduler_config;
  const int64_t tokens =
      std::min<int64_t>(static_cast<int64_t>(request.prompt.size()) + options.max_tokens,
                        config.max_position_embeddings);
  const int64_t blocks = (tokens + scheduler_config.block_size - 1) / scheduler_config.block_size *
                         config.num_layers * config.num_kv_heads;
  scheduler_config.kv_cache_bytes =
      static_cast<size_t>(blocks) *
      engine::KvBlockPool::BlockBytes(scheduler_config.block_size, config.head_dim,
                                      scheduler_config.kv_cache_dtype);
  auto scheduler = scheduler::Scheduler::Create(**model, tokenizer->get(), scheduler_config);
  if (!scheduler.ok()) return scheduler.status();
  auto handle = (*scheduler)->Submit(std::move(request));
  if (!handle.ok()) return handle.status();

  absl::Status status;
  while ((*scheduler)->HasWork()) {
    if (auto report = (*scheduler)->Step(); !report.ok()) return report.status();
    while (auto event = handle->Next(absl::ZeroDuration())) {
      if (event->final) status = event->status;
      std::fwrite(event->text.data(), 1, event->text.size(), stdout);
    }
    std::fflush(stdout);
  }
  if (isatty(fileno(stdout))) std::fputc('\n', stdout);  // a shell prompt on its own line
  std::fflush(stdout);
  return status;
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* command = app.add_subcommand(
      "generate", "Generate a completion of one prompt; the text goes to stdout, logs to stderr");
  command
      ->add_option("--model", options->model_dir,
                   "Hugging Face model directory (config.json, *.safetensors, tokenizer.json)")
      ->capture_default_str();
  command->add_option("--prompt", options->prompt, "Prompt text ('-' reads stdin)");
  command->add_option("--prompt-file", options->prompt_file,
                      "Read the prompt from FILE ('-': stdin)");
  command->add_flag("--no-special-tokens", options->no_special_tokens,
                    "Do not add the tokenizer's special tokens (BOS) to the prompt");
  command->add_option("--backend", options->backend, "cpu or cuda")->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads (0: all cores)")
      ->capture_default_str();
  command
      ->add_option("--dtype", options->dtype,
                   "Weight matrices in memory: auto (the checkpoint's), f32, bf16, f16, int8 or "
                   "int4")
      ->check(CLI::IsMember(WeightTypeChoices()))
      ->capture_default_str();
  command->add_option("--max-tokens", options->max_tokens, "Tokens to generate at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--min-tokens", options->min_tokens,
                   "Tokens to generate before end-of-sequence may end the output")
      ->capture_default_str();
  command->add_flag("--ignore-eos", options->ignore_eos, "Keep generating past end-of-sequence");
  command->add_option("--stop-token-id", options->stop_token_ids,
                      "Also stop on this id (repeatable)");
  command->add_option("--stop", options->stop,
                      "Stop before this string; it is not printed (repeatable)");
  for (const engine::SamplingField& field : engine::kSamplingFields) {
    std::visit(
        [&](auto member) {
          return command->add_option(engine::SamplingFlag(field), options->sampling.*member,
                                     engine::SamplingHelp(field));
        },
        field.member)
        ->capture_default_str();
  }
  command->add_option("--seed", options->sampling.seed, "Seed for reproducible sampling");
  command->add_option("--logit-bias", options->logit_bias, "TOKEN_ID=BIAS (repeatable)");
  command->callback([options] { ExitWith(RunGenerate(*options)); });
}

}  // namespace kvd::server
