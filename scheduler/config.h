// The scheduler's settings: batch limits, the KV cache's size, queue caps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "base/config_key.h"
#include "kernels/dtype.h"
#include "kernels/kv_layout.h"

namespace kvd::scheduler {

// Automatic prefix caching: full KV blocks of computed prefixes are kept and shared by later
// sequences of the same tenant (or tenants that share a salt) that start with the same tokens.
struct PrefixCacheConfig {
  // Cache and share prefix blocks. Not reloadable. Default true.
  bool enabled = true;
  // Fraction of the KV pool's blocks the cache may keep, in (0, 1]: blocks no sequence holds
  // beyond it leave least recently used first (they also leave whenever the pool needs room).
  // Not reloadable. Default 1.
  double max_pool_fraction = 1.0;
  // Record the cache's changes as KV events (Scheduler::kv_events) for routers to follow. Not
  // reloadable. Default false.
  bool kv_events = false;

  bool operator==(const PrefixCacheConfig&) const = default;
};

// How a decoding sequence drafts tokens for speculative decoding.
enum class SpeculativeMethod {
  kNone,        // one token per step
  kNgram,       // prompt lookup: in the sequence's own tokens and in the document it continues
  kDraftModel,  // a smaller model with the same tokenizer (`model`)
};
inline constexpr std::string_view kSpeculativeMethodChoices[] = {"none", "ngram", "draft_model"};

// Speculative decoding: each decoding sequence drafts tokens, and one step verifies them all,
// keeping the longest prefix the model itself would have produced (and the token after it).
// Greedy output is token for token what decoding one token per step gives; so is sampled output
// with n-gram drafts, and with a draft model it follows the same distribution (speculative
// sampling).
struct SpeculativeConfig {
  // none, ngram or draft_model. Not reloadable. Default none.
  SpeculativeMethod method = SpeculativeMethod::kNone;
  // Draft tokens per sequence and step, at most, in [1, 32]. Not reloadable. Default 4.
  int32_t num_speculative_tokens = 4;
  // ngram: the shortest and longest n-gram looked up, in [1, 16], min <= max. Not reloadable.
  // Defaults 1 and 4.
  int32_t prompt_lookup_min = 1;
  int32_t prompt_lookup_max = 4;
  // No drafts in a step that continues more running sequences than this (where a batch is
  // large enough to keep the hardware busy, verifying drafts costs more than it saves), in
  // [0, 65536]; 0: no limit. Not reloadable. Default 0.
  int32_t disable_by_batch_size = 0;
  // draft_model: the draft model's directory (Hugging Face layout), with the served model's
  // vocabulary and head size; its weights take the served model's dtype and its KV entries
  // the same pool. Not reloadable. Default empty.
  std::string model;
  // draft_model: its weight matrices' type: auto (the served model's, model.dtype), f32, bf16,
  // f16, int8 or int4 (a cheaper draft; the CPU backend has kernels for all, CUDA for the
  // first four). Not reloadable. Default auto.
  std::string dtype = "auto";

  bool operator==(const SpeculativeConfig&) const = default;
};

struct SchedulerConfig {
  // Sequences in one step, at most. Not reloadable. Default 256.
  int32_t max_num_seqs = 256;
  // Tokens in one step, at most: every running decode plus prompt chunks; long prompts are
  // split into chunks (chunked prefill). At least max_num_seqs. Not reloadable. Default 2048.
  int32_t max_num_batched_tokens = 2048;
  // Entries per KV block. Not reloadable. Default 16.
  int32_t block_size = 16;
  // KV cache size in bytes, used when kv_cache_memory_fraction is 0. Default 1 GiB.
  size_t kv_cache_bytes = size_t{1} << 30;
  // KV cache size as a fraction of the backend's memory (CPU: RAM, or a lower cgroup limit), in
  // (0, 1]; 0 uses kv_cache_bytes. Default 0.
  double kv_cache_memory_fraction = 0.0;
  // Type of the cached keys and values: f32, or bf16 (twice the entries in the same bytes,
  // half the bytes attention streams; the CPU backend only). Not reloadable. Default f32.
  kernels::DType kv_cache_dtype = kernels::DType::kF32;
  // Fraction of KV blocks kept free when admitting new requests, so that running sequences can
  // grow without being preempted at once, in [0, 0.5]. Default 0.01.
  double admission_watermark = 0.01;
  // Requests waiting for admission over all tenants; more are refused (Unavailable).
  // Default 4096.
  int32_t max_queued_requests = 4096;
  // Completions per request (`n`), at most. Default 16.
  int32_t max_n = 16;
  // Tokens of document compression each step is guaranteed while compressions wait (at most
  // what the running requests leave of max_num_batched_tokens, and at most half of that while
  // requests wait): running requests go first, then this share, then waiting requests;
  // compressions also take whatever budget is left.
  // At least 1. Default 512.
  int32_t compression_tokens_per_step = 512;
  // Threads that advance constrained sequences and build their token masks while the forward
  // pass runs, at a lower CPU priority, in [0, 64]; a sequence whose mask is not ready when a
  // step begins sits that step out. 0: the scheduler thread does it in the step, each mask
  // ready when sampled (every sequence's step then waits on each constraint's work). Not
  // reloadable. Default 1.
  int32_t constraint_threads = 1;
  // YAML section `prefix_cache` (beside `scheduler`).
  PrefixCacheConfig prefix_cache;
  // YAML section `speculative` (beside `scheduler`).
  SpeculativeConfig speculative;

  // Checks every key against its row of kSchedulerKeys / kPrefixCacheKeys / kSpeculativeKeys,
  // then the relations between them; an error is a base::ConfigKeyError about
  // "scheduler.<key>", "prefix_cache.<key>" or "speculative.<key>".
  [[nodiscard]] absl::Status Validate() const;
};

// The keys of the YAML section `scheduler` and their rules.
inline constexpr base::ConfigKey<SchedulerConfig> kSchedulerKeys[] = {
    {.name = "max_num_seqs", .member = &SchedulerConfig::max_num_seqs, .range = {.min = 1}},
    {.name = "max_num_batched_tokens",
     .member = &SchedulerConfig::max_num_batched_tokens,
     .range = {.min = 1}},
    {.name = "block_size",
     .member = &SchedulerConfig::block_size,
     .range = {.min = 1, .max = 1024}},
    {.name = "kv_cache_bytes", .member = &SchedulerConfig::kv_cache_bytes},
    {.name = "kv_cache_memory_fraction",
     .member = &SchedulerConfig::kv_cache_memory_fraction,
     .range = {.min = 0, .max = 1}},
    {.name = "kv_cache_dtype",
     .member = base::EnumMember<SchedulerConfig>{
         .name = [](const SchedulerConfig& c) { return kernels::DTypeName(c.kv_cache_dtype); },
         .set =
             [](SchedulerConfig& c, std::string_view name) {
               const std::optional<kernels::DType> dtype = kernels::DTypeFromName(name);
               if (dtype) c.kv_cache_dtype = *dtype;
               return dtype.has_value();
             }},
     .text = {.choices = kernels::kKvCacheTypeChoices}},
    {.name = "admission_watermark",
     .member = &SchedulerConfig::admission_watermark,
     .range = {.min = 0, .max = 0.5}},
    {.name = "max_queued_requests",
     .member = &SchedulerConfig::max_queued_requests,
     .range = {.min = 1}},
    {.name = "max_n", .member = &SchedulerConfig::max_n, .range = {.min = 1}},
    {.name = "compression_tokens_per_step",
     .member = &SchedulerConfig::compression_tokens_per_step,
     .range = {.min = 1}},
    {.name = "constraint_threads",
     .member = &SchedulerConfig::constraint_threads,
     .range = {.min = 0, .max = 64}},
};

// The keys of the YAML section `prefix_cache` that are the scheduler's.
inline constexpr base::ConfigKey<PrefixCacheConfig> kPrefixCacheKeys[] = {
    {.name = "enabled", .member = &PrefixCacheConfig::enabled},
    {.name = "max_pool_fraction",
     .member = &PrefixCacheConfig::max_pool_fraction,
     .range = {.min = 0, .max = 1, .min_open = true}},
    {.name = "kv_events", .member = &PrefixCacheConfig::kv_events},
};

// The keys of the YAML section `speculative`.
inline constexpr base::ConfigKey<SpeculativeConfig> kSpeculativeKeys[] = {
    {.name = "method",
     .member = base::EnumMember<SpeculativeConfig>{
         .name =
             [](const SpeculativeConfig& c) {
               return kSpeculativeMethodChoices[static_cast<size_t>(c.method)];
             },
         .set =
             [](SpeculativeConfig& c, std::string_view name) {
               for (size_t i = 0; i < std::size(kSpeculativeMethodChoices); ++i) {
                 if (kSpeculativeMethodChoices[i] != name) continue;
                 c.method = static_cast<SpeculativeMethod>(i);
                 return true;
               }
               return false;
             }},
     .text = {.choices = kSpeculativeMethodChoices}},
    {.name = "num_speculative_tokens",
     .member = &SpeculativeConfig::num_speculative_tokens,
     .range = {.min = 1, .max = 32}},
    {.name = "prompt_lookup_min",
     .member = &SpeculativeConfig::prompt_lookup_min,
     .range = {.min = 1, .max = 16}},
    {.name = "prompt_lookup_max",
     .member = &SpeculativeConfig::prompt_lookup_max,
     .range = {.min = 1, .max = 16}},
    {.name = "disable_by_batch_size",
     .member = &SpeculativeConfig::disable_by_batch_size,
     .range = {.min = 0, .max = 65536}},
    {.name = "model", .member = &SpeculativeConfig::model},
    {.name = "dtype",
     .member = &SpeculativeConfig::dtype,
     .text = {.choices = kernels::kWeightTypeChoices}},
};

}  // namespace kvd::scheduler
