// The Backend interface: every tensor operation the engine's forward pass needs, with no
// device-specific types. The CPU backend is the reference; others are tested against it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernels/kv_layout.h"
#include "kernels/tensor.h"

namespace kvd::kernels {

// The most logits TopLogits returns per row.
inline constexpr int32_t kMaxTopLogits = 256;

// Memory owned by a backend; freed when destroyed.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

// A weight prepared for a backend: the view ops take, and the backend's memory that holds it
// (never the checkpoint's, which may be closed once the weights are loaded).
struct PreparedWeight {
  Tensor tensor;
  std::unique_ptr<DeviceBuffer> storage;
};

// One product of Backend::LinearGroup: out = x · weightᵀ (+ bias).
struct Projection {
  const Tensor* weight = nullptr;
  const Tensor* bias = nullptr;  // null: none
  Tensor out;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Which kernels this backend runs here, in a line for logs and `kvd info`.
  virtual std::string KernelSummary() const { return std::string(name()); }
  // Bytes of memory the backend can use: CPU RAM (or a lower cgroup limit), or a GPU's memory.
  virtual size_t MemoryBytes() const = 0;

  // Whether the ops below read and write a KvPool whose keys and values are of `dtype`:
  // InvalidArgument naming the backend otherwise. Every backend keeps f32.
  [[nodiscard]] virtual absl::Status CheckKvCacheType(DType dtype) const;

  // Memory. Allocations are uninitialised, and resident once returned: the CPU backend faults
  // every page in on its threads (never call it from one of its ops): no step pays a first touch.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) = 0;
  // Makes a host weight usable by the ops below, in the dtype this backend computes with, or
  // in `dtype` where given (a model loaded in a dtype of its own, such as a draft model):
  // InvalidArgument when the backend has no kernels for that dtype.
  [[nodiscard]] virtual absl::StatusOr<PreparedWeight> PrepareWeight(
      const Tensor& host, std::optional<DType> dtype) = 0;
  [[nodiscard]] absl::StatusOr<PreparedWeight> PrepareWeight(const Tensor& host) {
    return PrepareWeight(host, std::nullopt);
  }
  virtual void CopyToHost(const Tensor& src, float* dst) = 0;
  virtual void CopyFromHost(const float* src, Tensor dst) = 0;

  // out[i] = table[indices[i]]: token embeddings, or selecting rows of activations.
  virtual void GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) = 0;
  // out = x / sqrt(mean(x²) + eps) * weight, per row.
  virtual void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) = 0;
  // out = x · weightᵀ (+ bias); weight is [out_features, in_features] as checkpoints store it.
  virtual void Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) = 0;
  // Linear of several weights over the same x (q, k and v), as one operation where a backend
  // can fuse them. The default runs Linear for each.
  virtual void LinearGroup(const Tensor& x, std::span<const Projection> projections);
  // out = silu(x · gate_weightᵀ) · (x · up_weightᵀ), the gated MLP's first half, as one
  // operation where a backend can fuse it; `up` (out's shape) is scratch for the second
  // product. The default runs Linear twice and SiluMul.
  virtual void GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight,
                           Tensor up, Tensor out);
  // Rotates each head of x ([rows, num_heads * head_dim]) in place by its row's position, in
  // the rotate_half convention: pairs (i, i + head_dim / 2) with frequencies inv_freq[i].
  virtual void ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                         std::span<const float> inv_freq) = 0;
  // out = silu(gate) * up.
  virtual void SiluMul(const Tensor& gate, const Tensor& up, Tensor out) = 0;
  // x += y.
  virtual void Add(Tensor x, const Tensor& y) = 0;
  // Writes the new rows of k and v ([rows, num_kv_heads * head_dim]) after each sequence's
  // cached entries, with log-vote 0. The block tables must already cover the new length.
  virtual void AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                        std::span<const SequenceKvRef> sequences) = 0;
  // The KV moves report a device's failure where it happens, so that it is not blamed on the
  // next step. Copies entry src[i] (key, value and log-vote) to dst[i] for every i:
  // copy-on-write of a shared block, or assembling a cache from parts of others. Slots in dst
  // are distinct and none is also in src.
  [[nodiscard]] virtual absl::Status CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                                                 std::span<const KvSlot> dst) = 0;
  // Reads entries to host arrays: keys and values [slots.size() * head_dim], log_votes
  // [slots.size()].
  [[nodiscard]] virtual absl::Status ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots,
                                                 float* keys, float* values, float* log_votes) = 0;
  // Writes entries from host arrays laid out as ReadKvSlots'.
  [[nodiscard]] virtual absl::Status WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots,
                                                  const float* keys, const float* values,
                                                  const float* log_votes) = 0;
  // Causal attention of q ([rows, num_heads * head_dim]) over each sequence's entries, new rows
  // included (AppendKv first): row i of a sequence sees cached_lengths[h] + i + 1 entries of kv
  // head h. Every logit gets the entry's log-vote added, so an entry with vote p weighs as p
  // identical copies. Sequences with `scores` also fold their probabilities into them.
  virtual void Attention(const Tensor& q, const KvPool& pool,
                         std::span<const SequenceKvRef> sequences, const AttentionShape& shape,
                         Tensor out) = 0;
  // For each row of `logits` ([rows, vocab] f32, backend memory): its k largest values, most
  // likely first (equal values: lower id first), with their ids, and two log-normalizers over
  // the whole row relative to its largest logit m: log Σ_j exp(logit_j − m) and
  // log Σ_j exp((logit_j − m) * inverse_temperatures[row]), both in [0, ln vocab], so that a
  // float keeps them to ~1e-7 whatever the logits' magnitude.
  // Host arrays: values and ids [rows * k], log_normalizers [rows * 2] (2r: at 1, 2r + 1: at
  // the row's inverse temperature). 1 <= k <= min(vocab, kMaxTopLogits); inverse temperatures
  // are positive and finite. Logits may be -inf (nothing in the sums; a row of them only has
  // normalizers of -inf) but not NaN. Returns once the results are on the host, so that
  // sampling never copies a whole [rows, vocab] block to the host.
  virtual void TopLogits(const Tensor& logits, int32_t k,
                         std::span<const float> inverse_temperatures, float* values, int32_t* ids,
                         float* log_normalizers) = 0;

  // Returns once every op queued so far has run: a device backend waits for its queue; the CPU
  // backend's ops have run when they return.
  virtual void Synchronize() {}

  // The first error an op met since the last call, then cleared. The compute ops return
  // nothing: a device backend's launch and copy failures surface here (the CPU backend has
  // none); the KV moves above return theirs.
  [[nodiscard]] virtual absl::Status TakeError() { return absl::OkStatus(); }
};

struct BackendOptions {
  int32_t num_threads = 0;  // 0: all hardware threads
  // The type a backend keeps the weight matrices in: kF32, kBF16, kF16, or (the CPU only)
  // kInt8 / kInt4, quantized at load (vectors such as norms stay f32); none: the checkpoint's
  // own. Activations are f32 on every backend; the CPU accumulates in f32 (int8/int4 weights
  // meet int8-quantized activations), the CUDA backend multiplies 16-bit by 16-bit
  // (docs/gpu.md).
  std::optional<DType> weight_dtype;
};

// Creates a backend by name: "cpu" (always available) or "cuda" where built and present.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name,
                                                                     const BackendOptions& options);

}  // namespace kvd::kernels
