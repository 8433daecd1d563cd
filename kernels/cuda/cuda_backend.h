// The CUDA backend: every Backend op on one NVIDIA GPU (device 0) with f32 activations like the
// CPU reference and weight matrices in f32 or bf16 (BackendOptions::weight_dtype), cuBLAS for
// the projections (bf16 ones with fp32 accumulation) and kvd's kernels (kernels/cuda/*.cu) for
// the rest, all on one stream. A failed CUDA or cuBLAS call is kept, with its call site, as the
// backend's first error, which TakeError reports (Model::Forward does after each step).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernels/backend.h"

namespace kvd::kernels::cuda {

class CudaBackend final : public Backend {
 public:
  // FailedPrecondition without a usable device, InvalidArgument for f16 weights; the CUDA
  // error otherwise.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const BackendOptions& options);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  // Device memory free now (after the weights, when asked once they are loaded), so that
  // `kv_cache_memory_fraction` sizes the KV pool from what is left.
  size_t MemoryBytes() const override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override;
  absl::StatusOr<PreparedWeight> PrepareWeight(const Tensor& host) override;
  void CopyToHost(const Tensor& src, float* dst) override;
  void CopyFromHost(const float* src, Tensor dst) override;

  void GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override;
  void Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) override;
  void ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                 std::span<const float> inv_freq) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor out) override;
  void Add(Tensor x, const Tensor& y) override;
  void AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                std::span<const SequenceKvRef> sequences) override;
  void CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                   std::span<const KvSlot> dst) override;
  void ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots, float* keys, float* values,
                   float* log_votes) override;
  void WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                    const float* values, const float* log_votes) override;
  void Attention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                 const AttentionShape& shape, Tensor out) override;
  absl::Status TakeError() override;

 private:
  CudaBackend(cudaStream_t stream, cublasHandle_t blas, std::optional<DType> weight_dtype)
      : stream_(stream), blas_(blas), weight_dtype_(weight_dtype) {}
  // Whether a host weight is kept in bf16 on the device: a matrix (vectors such as norms stay
  // f32) asked for in bf16, or in bf16 already when no type was asked for.
  bool KeepsBf16(const Tensor& host) const;
  // `count` bf16 values of device scratch for an activation, grown as needed; null on failure.
  uint16_t* Bf16Scratch(int64_t count);

  // Keeps the first failure; true when `error` is a success.
  bool Check(cudaError_t error, const char* call);
  bool Check(cublasStatus_t status, const char* call);
  // Checks the launch just queued.
  void CheckLaunch(const char* kernel);

  // Host arrays copied to the device for one op, in one staging buffer reused across ops
  // (stream-ordered): Stage each, then Upload once, then Device(offset) for each.
  class Staging {
   public:
    template <typename T>
    size_t Add(std::span<const T> values);
    size_t Reserve(size_t bytes);  // room for the device to fill (results read back)
    bool Upload(CudaBackend& backend);
    void* Device(size_t offset) const { return static_cast<char*>(device_) + offset; }
    void Free();

   private:
    std::vector<char> host_;
    size_t added_end_ = 0;  // bytes of host_ that hold staged arrays (the rest is reserved)
    void* device_ = nullptr;
    size_t capacity_ = 0;
  };

  cudaStream_t stream_;
  cublasHandle_t blas_;
  std::optional<DType> weight_dtype_;
  absl::Status error_;
  Staging staging_;
  std::unique_ptr<DeviceBuffer> bf16_scratch_;
};

}  // namespace kvd::kernels::cuda
