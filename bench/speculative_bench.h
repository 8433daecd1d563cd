// What speculative decoding buys: the same requests served by one scheduler without drafts and
// by one with them, in interleaved rounds, at several batch sizes. The requests are questions
// about stored documents (each document's cache computed once, its token ids kept with it, as an
// upload keeps them) or, without documents, seeded random prompts (a model with random weights:
// drafts that are almost never right, the cost of trying). Reports decode and end-to-end
// throughput, how many draft tokens were kept, and whether both runs produced the same tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "engine/model.h"
#include "scheduler/config.h"

namespace kvd::bench {

struct SpeculativeQuestions {
  std::string document;                // the document's text
  std::vector<std::string> questions;  // asked after it, each on its own
};

struct SpeculativeBenchOptions {
  // Documents and their questions; empty: seeded random prompts of prompt_tokens.
  std::vector<SpeculativeQuestions> documents;
  // How the documents and questions are framed (unused without documents).
  cache_store::DocumentPipeline pipeline;
  const cache_store::DocumentPrompts* prompts = nullptr;
  std::vector<std::string> stop;  // stop strings of every question
  int32_t random_requests = 16;   // without documents
  int32_t prompt_tokens = 128;    // without documents
  // Without documents: prompt ids drawn from the first this many of the vocabulary (0: all of
  // it); a few make prompts repeat themselves, so that drafts are tried, and refused.
  int32_t prompt_vocab = 0;
  int32_t max_tokens = 16;  // per request; random prompts ignore end-of-sequence
  // 0: greedy; else every request samples at it, seeded by its index.
  float temperature = 0.0f;
  std::vector<int32_t> batch_sizes = {1, 16};
  int32_t rounds = 3;
  scheduler::SpeculativeConfig speculative = {.method = scheduler::SpeculativeMethod::kNgram};
  uint64_t seed = 1;
};

struct SpeculativeBenchResult {
  int32_t batch = 0;
  bool speculative = false;
  // Medians over the rounds: tokens after each request's first over the time from its first
  // token to its last, summed over requests (batch 1: what one user sees stream), and every
  // token over the wall time of the whole run, prefill included.
  double decode_tokens_per_second = 0.0;
  double tokens_per_second = 0.0;
  std::vector<double> decode_rounds;  // every round's decode_tokens_per_second
  int64_t tokens = 0;                 // generated, per round
  int64_t steps = 0;                  // per round
  int64_t draft_tokens = 0;           // verified, per round
  double accepted_fraction = 0.0;     // draft tokens kept over draft tokens verified
  // Every request produced what the run without drafts produced (with a draft model and a
  // temperature, speculative sampling keeps the distribution, not the tokens).
  bool same_tokens = true;
};

[[nodiscard]] absl::StatusOr<std::vector<SpeculativeBenchResult>> MeasureSpeculativeDecoding(
    engine::Model& model, const SpeculativeBenchOptions& options);

}  // namespace kvd::bench
