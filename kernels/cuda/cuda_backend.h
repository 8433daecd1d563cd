// The CUDA backend: every Backend op on one NVIDIA GPU (device 0) with f32 activations like the
// CPU reference and weight matrices in f32, bf16 or f16 (BackendOptions::weight_dtype), cuBLAS
// for the projections (16-bit ones with fp32 accumulation) and kvd's kernels (kernels/cuda/*.cu)
// for the rest, all on one stream. A failed CUDA or cuBLAS call is kept, with its call site, as the
// backend's first error, which TakeError reports (Model::Forward does after each step).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernels/backend.h"

namespace kvd::kernels::cuda {

class CudaBackend final : public Backend {
 public:
  // FailedPrecondition without a usable device; the CUDA error otherwise.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const BackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  // Device memory free now (after the weights, when asked once they are loaded), so that
  // `kv_cache_memory_fraction` sizes the KV pool from what is left.
  size_t MemoryBytes() const override;
  void Synchronize() override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override;
  using Backend::PrepareWeight;
  absl::StatusOr<PreparedWeight> PrepareWeight(const Tensor& host,
                                               std::optional<DType> dtype) override;
  void CopyToHost(const Tensor& src, float* dst) override;
  void CopyFromHost(const float* src, Tensor dst) override;

  void GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override;
  void Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) override;
  // x is rounded to the weights' 16-bit type once for every product, not once for each.
  void LinearGroup(const Tensor& x, std::span<const Projection> projections) override;
  void GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight, Tensor up,
                   Tensor out) override;
  void ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                 std::span<const float> inv_freq) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor out) override;
  void Add(Tensor x, const Tensor& y) override;
  void AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                std::span<const SequenceKvRef> sequences) override;
  absl::Status CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                           std::span<const KvSlot> dst) override;
  absl::Status ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots, float* keys,
                           float* values, float* log_votes) override;
  absl::Status WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                            const float* values, const float* log_votes) override;
  void Attention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                 const AttentionShape& shape, Tensor out) override;
  void TopLogits(const Tensor& logits, int32_t k, std::span<const float> inverse_temperatures,
                 float* values, int32_t* ids, float* log_normalizers) override;
  absl::Status TakeError() override;

 private:
  CudaBackend(cudaStream_t stream, cublasHandle_t blas, std::optional<DType> weight_dtype,
              int32_t multiprocessors)
      : stream_(stream),
        blas_(blas),
        weight_dtype_(weight_dtype),
        multiprocessors_(multiprocessors) {}
  // The 16-bit type (bf16 or f16) a host weight is kept in on the device, none for f32: a
  // matrix's (vectors such as norms stay f32) is the type asked for, or its own when none was.
  std::optional<DType> KeptHalfType(const Tensor& host, std::optional<DType> dtype) const;
  // At least `bytes` of device scratch in `buffer`, grown as needed; null on failure (kept as
  // the error).
  void* Scratch(std::unique_ptr<DeviceBuffer>& buffer, size_t bytes);
  // x rounded to `type` (bf16 or f16) in scratch memory that the next rounding reuses; null
  // after a failure.
  const void* RoundToHalf(const Tensor& x, DType type);
  // out = x · weightᵀ (+ bias); `x_half` is x rounded to a 16-bit weight's type (RoundToHalf),
  // unused for f32 weights.
  void Project(const Tensor& x, const void* x_half, const Tensor& weight, const Tensor* bias,
               Tensor out);

  // Keeps the first failure; true when `error` is a success.
  bool Check(cudaError_t error, const char* call);
  bool Check(cublasStatus_t status, const char* call);
  // Checks the launch just queued.
  void CheckLaunch(const char* kernel);

  // Host arrays copied to the device for one op: Add (or Reserve) each, Upload once, then
  // Device(offset) for each. Upload packs the arrays into pinned host memory and copies them
  // with one cudaMemcpyAsync, which returns at once and runs when the stream reaches it, after
  // the kernels queued before. Until then that host region must not change, so ops take turns
  // through kHostRegions regions, each reused only once the event recorded after its last copy
  // has passed. Four let the host queue about a layer ahead of the device; more bought nothing
  // on an H200, whose decode step waits for the host's queueing, never the host for it, and
  // each region keeps pinned the largest upload it has held. The device buffer is single:
  // copies and kernels share one stream, which orders every use of it.
  class Staging {
   public:
    // Borrows `values` until Upload, which copies them.
    template <typename T>
    size_t Add(std::span<const T> values);
    size_t Reserve(size_t bytes);  // room for the device to fill (results read back)
    bool Upload(CudaBackend& backend);
    void* Device(size_t offset) const { return static_cast<char*>(device_) + offset; }
    // Frees every buffer and event; the stream must be idle.
    void Free(CudaBackend& backend);

   private:
    static constexpr size_t kHostRegions = 4;
    struct HostRegion {
      char* data = nullptr;  // pinned (cudaMallocHost)
      size_t capacity = 0;
      cudaEvent_t uploaded = nullptr;  // recorded after the copy that last read `data`
    };
    struct Piece {
      const void* data;
      size_t bytes;
      size_t offset;
    };
    // Grows the device buffer to at least `bytes`.
    bool GrowDevice(CudaBackend& backend, size_t bytes);
    // Packs the added arrays into the next host region and queues their copy to the device.
    bool CopyAdded(CudaBackend& backend);
    // Waits until the last copy from `region` has run, then grows it to at least `bytes`.
    static bool Prepare(CudaBackend& backend, HostRegion& region, size_t bytes);

    std::vector<Piece> pieces_;  // the arrays added since the last Upload
    size_t end_ = 0;             // bytes laid out since the last Upload, reservations included
    size_t added_end_ = 0;       // the end of the last added array: what the host side copies
    std::array<HostRegion, kHostRegions> regions_;
    size_t next_region_ = 0;
    void* device_ = nullptr;
    size_t device_capacity_ = 0;
  };

  cudaStream_t stream_;
  cublasHandle_t blas_;
  std::optional<DType> weight_dtype_;
  absl::Status error_;
  Staging staging_;
  int32_t multiprocessors_;
  std::unique_ptr<DeviceBuffer> half_scratch_;     // activations rounded to 16 bits for a GEMM
  std::unique_ptr<DeviceBuffer> attention_lse_;    // [rows, num_heads] of a scored step
  std::unique_ptr<DeviceBuffer> decode_partials_;  // partitions' results before their merge
  std::vector<char> top_logits_host_;              // TopLogits' results, copied back at once
};

}  // namespace kvd::kernels::cuda
