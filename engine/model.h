// A loaded LLaMA-family model and its batched forward pass over the paged KV cache: any mix of
// prefill chunks and single decode tokens in one step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/kv_cache.h"
#include "engine/model_config.h"
#include "engine/model_weights.h"
#include "engine/top_logits.h"
#include "kernels/backend.h"

namespace kvd::engine {

// Which of a sequence's new tokens a step returns logits for.
enum class LogitRows {
  kLast,  // the last one: the next token is sampled from it
  kAll,   // every one (scoring a text)
  kNone,  // none: a chunk of a prompt whose end is still to come
};

// Attention scores a step collects for one sequence, for KV compression: per (layer, kv head)
// and entry, the softmax probabilities of the step's rows from `first_row` on and of the kv
// head's query heads, folded by `reduce` into what `values` already holds (start at zero).
struct StepScores {
  kernels::ScoreReduce reduce = kernels::ScoreReduce::kMax;
  int32_t first_row = 0;  // of the step's tokens
  int32_t stride = 0;     // entries per (layer, kv head), at least each one's length after the step
  std::vector<float> values;  // [num_layers * num_kv_heads * stride], layer-major
  // When set, the step also returns the queries of the scored rows (after RoPE, unscaled):
  // [num_layers, rows from first_row, num_heads * head_dim], so that a caller can compute the
  // exact logits of any entry under them.
  bool collect_queries = false;
  std::vector<float> queries;

  float at(int32_t layer, int32_t kv_head, int32_t num_kv_heads, int32_t entry) const {
    return values[(static_cast<size_t>(layer) * num_kv_heads + kv_head) * stride + entry];
  }
};

// One sequence's part of a forward step: its new tokens go after what `kv` holds, at positions
// kv->next_position() onwards; the step appends their keys and values and advances `kv`.
struct SequenceStep {
  SequenceKv* kv = nullptr;
  std::span<const int32_t> tokens;
  LogitRows logits = LogitRows::kLast;
  StepScores* scores = nullptr;  // optional
};

// How a step returns its logit rows: whole ([rows, vocab] to the host), or each row's top_k
// largest logits with its log-normalizers (TopLogits), the whole rows staying on the backend
// until the next step (Model::CopyLogitsRow). The second spares a GPU the copy of every row.
struct LogitsRequest {
  int32_t top_k = 0;  // 0: whole rows; else at most kernels::kMaxTopLogits
  // Per logit row: 1 / its sampling temperature, for the tempered normalizer (1 when greedy).
  std::vector<float> inverse_temperatures;
};

// Logits of a step: for each step in order, the rows its `logits` asks for, whole or as top
// logits (LogitsRequest).
struct StepLogits {
  int32_t vocab_size = 0;
  int32_t num_rows = 0;
  std::vector<float> values;           // whole rows, row-major [num_rows, vocab]
  int32_t top_k = 0;                   // > 0: top logits instead
  std::vector<float> top_values;       // [num_rows, top_k]
  std::vector<int32_t> top_ids;        // [num_rows, top_k]
  std::vector<float> log_normalizers;  // [num_rows, 2]: at temperature 1, at the row's (TopLogits)

  int32_t rows() const { return num_rows; }
  std::span<const float> row(int32_t i) const {
    return {values.data() + static_cast<size_t>(i) * vocab_size, static_cast<size_t>(vocab_size)};
  }
  TopLogits top(int32_t i) const {
    const size_t offset = static_cast<size_t>(i) * top_k;
    return {{top_values.data() + offset, static_cast<size_t>(top_k)},
            {top_ids.data() + offset, static_cast<size_t>(top_k)},
            log_normalizers[2 * static_cast<size_t>(i)],
            log_normalizers[2 * static_cast<size_t>(i) + 1],
            vocab_size};
  }
};

class Model {
 public:
  // Loads config.json (+ generation_config.json) and the safetensors weights from `model_dir`,
  // its weight matrices in `weight_dtype` where given (else the backend's choice).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Load(
      const std::filesystem::path& model_dir, kernels::Backend& backend,
      std::optional<kernels::DType> weight_dtype = std::nullopt);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  kernels::Backend& backend() const { return backend_; }

  // Runs one step. Token ids and positions are checked (InvalidArgument); each sequence's
  // blocks must already be reserved for its new tokens (SequenceKv::Reserve).
  [[nodiscard]] absl::Status Forward(std::span<const SequenceStep> steps, KvBlockPool& pool,
                                     StepLogits& logits, const LogitsRequest& request = {});
  // Copies logit row `row` of the last step whole to `out` (resized to the vocabulary), also
  // after a step that returned top logits; OutOfRange past its rows.
  [[nodiscard]] absl::Status CopyLogitsRow(int32_t row, std::vector<float>& out);

 private:
  Model(ModelConfig config, ModelWeights weights, kernels::Backend& backend);
  absl::Status EnsureScratch(int64_t rows, int64_t logit_rows);
  // Checks each step's scores against the cache geometry, copies them to the backend, and
  // makes room there for the queries the steps collect.
  absl::Status PrepareScores(std::span<const SequenceStep> steps);
  // Gathers this layer's scored rows' queries, for the steps that collect them, on the backend.
  void CollectQueries(const kernels::Tensor& q, int32_t layer_index,
                      std::span<const SequenceStep> steps,
                      std::span<const kernels::SequenceKvRef> refs);
  // Brings the step's scores and collected queries to the host (StepScores), one copy each.
  void ReturnScores(std::span<const SequenceStep> steps);
  void RunLayer(const LayerWeights& layer, int32_t layer_index, std::span<const SequenceStep> steps,
                std::span<const int32_t> positions, KvBlockPool& pool);

  struct Scratch {
    int64_t rows = 0;
    int64_t logit_rows = 0;
    std::vector<std::unique_ptr<kernels::DeviceBuffer>> buffers;
    kernels::Tensor hidden, normed, q, k, v, attention, gate, up, selected, logits;
  };

  ModelConfig config_;
  ModelWeights weights_;
  kernels::Backend& backend_;
  std::vector<float> inv_freq_;
  Scratch scratch_;
  int64_t last_logit_rows_ = 0;  // rows of scratch_.logits the last step filled
  // Per-step arrays a forward step keeps on the backend for all its sequences together (their
  // scores, or their collected queries), in one buffer kept across steps and grown as needed,
  // so that a step allocates nothing and copies each way once.
  struct StepArrays {
    std::unique_ptr<kernels::DeviceBuffer> buffer;
    std::vector<int64_t> offsets;  // per step, in floats; -1: none
    int64_t floats = 0;            // in use this step
    std::vector<float> host;       // the used part, on its way to or from the backend
    // Step `step`'s array on the backend; null when it has none (or an empty one).
    float* at(size_t step) const {
      if (offsets[step] < 0 || buffer == nullptr) return nullptr;
      return static_cast<float*>(buffer->data()) + offsets[step];
    }
  };
  // Makes `arrays.buffer` hold at least `arrays.floats` floats.
  absl::Status Reserve(StepArrays& arrays);
  kernels::Tensor Whole(const StepArrays& arrays) const;

  StepArrays step_scores_;
  StepArrays step_queries_;
};

}  // namespace kvd::engine
