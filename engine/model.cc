#include "engine/model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/rope.h"

namespace kvd::engine {

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::filesystem::path& model_dir,
                                                   kernels::Backend& backend,
                                                   std::optional<kernels::DType> weight_dtype) {
  auto config = LoadModelConfig(model_dir);
  if (!config.ok()) return config.status();
  auto checkpoint = Checkpoint::Open(model_dir);
  if (!checkpoint.ok()) return checkpoint.status();
  auto weights = LoadModelWeights(**checkpoint, *config, backend, weight_dtype);
  if (!weights.ok()) return weights.status();
  return std::unique_ptr<Model>(new Model(*std::move(config), *std::move(weights), backend));
}

Model::Model(ModelConfig config, ModelWeights weights, kernels::Backend& backend)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(backend),
      inv_freq_(RopeInverseFrequencies(config_)) {}

absl::Status Model::EnsureScratch(int64_t rows, int64_t logit_rows) {
  if (rows <= scratch_.rows && logit_rows <= scratch_.logit_rows) return absl::OkStatus();
  rows = std::max(rows, scratch_.rows);
  logit_rows = std::max(logit_rows, scratch_.logit_rows);
  Scratch scratch;
  scratch.rows = rows;
  scratch.logit_rows = logit_rows;
  auto make = [&](int64_t tensor_rows, int64_t cols, kernels::Tensor& out) -> absl::Status {
    auto buffer = backend_.Allocate(static_cast<size_t>(tensor_rows * cols) * sizeof(float));
    if (!buffer.ok()) return buffer.status();
    out = kernels::Tensor{(*buffer)->data(), kernels::DType::kF32, tensor_rows, cols};
    scratch.buffers.push_back(*std::move(buffer));
    return absl::OkStatus();
  };
  const int64_t q_width = int64_t{config_.num_heads} * config_.head_dim;
  const int64_t kv_width = int64_t{config_.num_kv_heads} * config_.head_dim;
  for (auto [tensor, cols] :
       {std::pair{&scratch.hidden, int64_t{config_.hidden_size}},
        std::pair{&scratch.normed, int64_t{config_.hidden_size}}, std::pair{&scratch.q, q_width},
        std::pair{&scratch.k, kv_width}, std::pair{&scratch.v, kv_width},
        std::pair{&scratch.attention, q_width},
        std::pair{&scratch.gate, int64_t{config_.intermediate_size}},
        std::pair{&scratch.up, int64_t{config_.intermediate_size}}}) {
    if (auto status = make(rows, cols, *tensor); !status.ok()) return status;
  }
  if (auto status = make(logit_rows, config_.hidden_size, scratch.selected); !status.ok()) {
    return status;
  }
  if (auto status = make(logit_rows, config_.vocab_size, scratch.logits); !status.ok()) {
    return status;
  }
  scratch_ = std::move(scratch);
  return absl::OkStatus();
}

absl::Status Model::Forward(std::span<const SequenceStep> steps, KvBlockPool& pool,
                            StepLogits& logits, const LogitsRequest& request) {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;
  std::vector<int32_t> logit_rows;  // rows of the step whose logits are returned
  for (const SequenceStep& step : steps) {
    if (step.tokens.empty()) return absl::InvalidArgumentError("forward: a sequence has no tokens");
    const int64_t end_position = int64_t{step.kv->next_position()} + step.tokens.size();
    if (end_position > config_.max_position_embeddings) {
      return absl::InvalidArgumentError(absl::StrCat("forward: position ", end_position - 1,
                                                     " is beyond the model's context of ",
                                                     config_.max_position_embeddings, " tokens"));
    }
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
      for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
        const int64_t capacity =
            static_cast<int64_t>(step.kv->blocks(layer, head).size()) * pool.block_size();
        if (step.kv->length(layer, head) + static_cast<int64_t>(step.tokens.size()) > capacity) {
          return absl::FailedPreconditionError("forward: kv blocks not reserved for new tokens");
        }
      }
    }
    const int32_t first_row = static_cast<int32_t>(tokens.size());
    for (size_t i = 0; i < step.tokens.size(); ++i) {
      const int32_t token = step.tokens[i];
      if (token < 0 || token >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "forward: token id ", token, " is outside the vocabulary of ", config_.vocab_size));
      }
      tokens.push_back(token);
      positions.push_back(step.kv->next_position() + static_cast<int32_t>(i));
      const bool is_last = i + 1 == step.tokens.size();
      if (step.logits == LogitRows::kAll || (step.logits == LogitRows::kLast && is_last)) {
        logit_rows.push_back(first_row + static_cast<int32_t>(i));
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(tokens.size());
  const int64_t num_logit_rows = static_cast<int64_t>(logit_rows.size());
  if (request.top_k < 0 || request.top_k > kernels::kMaxTopLogits ||
      (request.top_k > 0 &&
       request.inverse_temperatures.size() != static_cast<size_t>(num_logit_rows))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "forward: top logits need 0 < top_k <= ", kernels::kMaxTopLogits,
        " and one inverse temperature per logit row (", num_logit_rows, "), not top_k ",
        request.top_k, " with ", request.inverse_temperatures.size()));
  }
  if (auto status = EnsureScratch(rows, num_logit_rows); !status.ok()) return status;
  if (auto status = PrepareScores(steps); !status.ok()) return status;

  kernels::Tensor hidden = scratch_.hidden.Rows(0, rows);
  backend_.GatherRows(weights_.embed_tokens.tensor, tokens, hidden);
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    RunLayer(weights_.layers[layer], layer, steps, positions, pool);
  }
  for (const SequenceStep& step : steps) step.kv->Advance(static_cast<int32_t>(step.tokens.size()));
  ReturnScores(steps);

  logits.vocab_size = config_.vocab_size;
  logits.num_rows = static_cast<int32_t>(num_logit_rows);
  logits.values.clear();
  logits.top_k = 0;
  last_logit_rows_ = num_logit_rows;
  if (num_logit_rows == 0) return backend_.TakeError();
  // Only the rows whose logits are wanted go through the final norm and the LM head.
  kernels::Tensor selected = scratch_.selected.Rows(0, num_logit_rows);
  backend_.GatherRows(hidden, logit_rows, selected);
  backend_.RmsNorm(selected, weights_.final_norm.tensor, config_.rms_norm_eps, selected);
  kernels::Tensor out = scratch_.logits.Rows(0, num_logit_rows);
  backend_.Linear(selected, weights_.lm_head(), nullptr, out);
  if (request.top_k == 0) {
    logits.values.resize(static_cast<size_t>(out.num_elements()));
    backend_.CopyToHost(out, logits.values.data());
    return backend_.TakeError();
  }
  const int32_t k = std::min(request.top_k, config_.vocab_size);
  logits.top_k = k;
  logits.top_values.resize(static_cast<size_t>(num_logit_rows) * k);
  logits.top_ids.resize(logits.top_values.size());
  logits.log_normalizers.resize(2 * static_cast<size_t>(num_logit_rows));
  backend_.TopLogits(out, k, request.inverse_temperatures, logits.top_values.data(),
                     logits.top_ids.data(), logits.log_normalizers.data());
  return backend_.TakeError();
}

absl::Status Model::CopyLogitsRow(int32_t row, std::vector<float>& out) {
  if (row < 0 || row >= last_logit_rows_) {
    return absl::OutOfRangeError(
        absl::StrCat("logits row ", row, " is not among the last step's ", last_logit_rows_));
  }
  out.resize(static_cast<size_t>(config_.vocab_size));
  backend_.CopyToHost(scratch_.logits.Rows(row, 1), out.data());
  return backend_.TakeError();
}

absl::Status Model::Reserve(StepArrays& arrays) {
  const size_t bytes = static_cast<size_t>(arrays.floats) * sizeof(float);
  const size_t held = arrays.buffer != nullptr ? arrays.buffer->size() : 0;
  if (held >= bytes) return absl::OkStatus();
  arrays.buffer.reset();
  auto buffer = backend_.Allocate(std::max(bytes, 2 * held));
  if (!buffer.ok()) return buffer.status();
  arrays.buffer = *std::move(buffer);
  return absl::OkStatus();
}

kernels::Tensor Model::Whole(const StepArrays& arrays) const {
  return kernels::Tensor{arrays.buffer->data(), kernels::DType::kF32, 1, arrays.floats};
}

absl::Status Model::PrepareScores(std::span<const SequenceStep> steps) {
  step_scores_.offsets.assign(steps.size(), -1);
  step_queries_.offsets.assign(steps.size(), -1);
  step_scores_.floats = 0;
  step_queries_.floats = 0;
  const int64_t q_cols = int64_t{config_.num_heads} * config_.head_dim;
  for (size_t s = 0; s < steps.size(); ++s) {
    StepScores* scores = steps[s].scores;
    if (scores == nullptr) continue;
    const SequenceKv& kv = *steps[s].kv;
    const int32_t new_rows = static_cast<int32_t>(steps[s].tokens.size());
    const size_t expected = static_cast<size_t>(config_.num_layers) * config_.num_kv_heads *
                            std::max(scores->stride, 0);
    if (scores->values.size() != expected || scores->first_row < 0) {
      return absl::InvalidArgumentError(absl::StrCat("forward: scores hold ", scores->values.size(),
                                                     " values, not ", expected,
                                                     ", or start at a negative row"));
    }
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
      for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
        if (kv.length(layer, head) + new_rows > scores->stride) {
          return absl::InvalidArgumentError(
              absl::StrCat("forward: scores stride ", scores->stride, " is below the ",
                           kv.length(layer, head) + new_rows, " entries of layer ", layer));
        }
      }
    }
    step_scores_.offsets[s] = step_scores_.floats;
    step_scores_.floats += static_cast<int64_t>(expected);
    if (scores->collect_queries) {
      step_queries_.offsets[s] = step_queries_.floats;
      step_queries_.floats +=
          int64_t{config_.num_layers} * std::max(0, new_rows - scores->first_row) * q_cols;
    }
  }
  if (step_scores_.floats == 0) return absl::OkStatus();
  if (auto status = Reserve(step_scores_); !status.ok()) return status;
  if (auto status = Reserve(step_queries_); !status.ok()) return status;
  step_scores_.host.resize(static_cast<size_t>(step_scores_.floats));
  for (size_t s = 0; s < steps.size(); ++s) {
    if (step_scores_.offsets[s] < 0) continue;
    const std::vector<float>& values = steps[s].scores->values;
    std::copy(values.begin(), values.end(), step_scores_.host.begin() + step_scores_.offsets[s]);
  }
  backend_.CopyFromHost(step_scores_.host.data(), Whole(step_scores_));
  return absl::OkStatus();
}

void Model::CollectQueries(const kernels::Tensor& q, int32_t layer_index,
                           std::span<const SequenceStep> steps,
                           std::span<const kernels::SequenceKvRef> refs) {
  std::vector<int32_t> indices;
  for (size_t s = 0; s < steps.size(); ++s) {
    float* queries = step_queries_.at(s);
    const int32_t first = refs[s].first_row + (queries ? steps[s].scores->first_row : 0);
    const int32_t rows = queries ? std::max(0, refs[s].num_rows - steps[s].scores->first_row) : 0;
    if (rows == 0) continue;
    indices.resize(rows);
    for (int32_t i = 0; i < rows; ++i) indices[i] = first + i;
    backend_.GatherRows(q, indices,
                        kernels::Tensor{queries + int64_t{layer_index} * rows * q.cols,
                                        kernels::DType::kF32, rows, q.cols});
  }
}

void Model::ReturnScores(std::span<const SequenceStep> steps) {
  if (step_scores_.floats == 0) return;
  backend_.CopyToHost(Whole(step_scores_), step_scores_.host.data());
  step_queries_.host.resize(static_cast<size_t>(step_queries_.floats));
  if (step_queries_.floats > 0) {
    backend_.CopyToHost(Whole(step_queries_), step_queries_.host.data());
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    if (step_scores_.offsets[s] < 0) continue;
    StepScores& scores = *steps[s].scores;
    const auto scores_begin = step_scores_.host.begin() + step_scores_.offsets[s];
    std::copy(scores_begin, scores_begin + static_cast<int64_t>(scores.values.size()),
              scores.values.begin());
    if (step_queries_.offsets[s] < 0) continue;
    const int64_t rows =
        std::max<int64_t>(0, int64_t{std::ssize(steps[s].tokens)} - scores.first_row);
    const auto queries_begin = step_queries_.host.begin() + step_queries_.offsets[s];
    scores.queries.assign(queries_begin, queries_begin + int64_t{config_.num_layers} * rows *
                                                             config_.num_heads * config_.head_dim);
  }
}

void Model::RunLayer(const LayerWeights& layer, int32_t layer_index,
                     std::span<const SequenceStep> steps, std::span<const int32_t> positions,
                     KvBlockPool& pool) {
  const int64_t rows = static_cast<int64_t>(positions.size());
  kernels::Tensor hidden = scratch_.hidden.Rows(0, rows);
  kernels::Tensor normed = scratch_.normed.Rows(0, rows);
  kernels::Tensor q = scratch_.q.Rows(0, rows);
  kernels::Tensor k = scratch_.k.Rows(0, rows);
  kernels::Tensor v = scratch_.v.Rows(0, rows);
  kernels::Tensor attention = scratch_.attention.Rows(0, rows);
  kernels::Tensor gate = scratch_.gate.Rows(0, rows);
  kernels::Tensor up = scratch_.up.Rows(0, rows);
  auto bias = [](const std::optional<kernels::PreparedWeight>& weight) {
    return weight ? &weight->tensor : nullptr;
  };

  backend_.RmsNorm(hidden, layer.input_norm.tensor, config_.rms_norm_eps, normed);
  const kernels::Projection qkv[] = {{&layer.q_proj.tensor, bias(layer.q_bias), q},
                                     {&layer.k_proj.tensor, bias(layer.k_bias), k},
                                     {&layer.v_proj.tensor, bias(layer.v_bias), v}};
  backend_.LinearGroup(normed, qkv);
  backend_.ApplyRope(q, config_.num_heads, positions, inv_freq_);
  backend_.ApplyRope(k, config_.num_kv_heads, positions, inv_freq_);

  std::vector<std::vector<const int32_t*>> tables(steps.size());
  std::vector<kernels::SequenceKvRef> refs(steps.size());
  int32_t first_row = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      tables[s].push_back(steps[s].kv->blocks(layer_index, head).data());
    }
    refs[s] = kernels::SequenceKvRef{first_row, static_cast<int32_t>(steps[s].tokens.size()),
                                     tables[s], steps[s].kv->layer_lengths(layer_index)};
    if (float* step_scores = step_scores_.at(s)) {
      const StepScores& scores = *steps[s].scores;
      float* layer_scores =
          step_scores + static_cast<size_t>(layer_index) * config_.num_kv_heads * scores.stride;
      refs[s].scores = {layer_scores, scores.stride, scores.first_row, scores.reduce};
    }
    first_row += refs[s].num_rows;
  }
  CollectQueries(q, layer_index, steps, refs);
  backend_.AppendKv(k, v, pool.storage(), refs);
  const kernels::AttentionShape shape{config_.num_heads, config_.num_kv_heads, config_.head_dim,
                                      1.0f / std::sqrt(static_cast<float>(config_.head_dim))};
  backend_.Attention(q, pool.storage(), refs, shape, attention);
  backend_.Linear(attention, layer.o_proj.tensor, nullptr, normed);
  backend_.Add(hidden, normed);

  backend_.RmsNorm(hidden, layer.post_attention_norm.tensor, config_.rms_norm_eps, normed);
  backend_.GatedLinear(normed, layer.gate_proj.tensor, layer.up_proj.tensor, up, gate);
  backend_.Linear(gate, layer.down_proj.tensor, nullptr, normed);
  backend_.Add(hidden, normed);
}

}  // namespace kvd::engine
