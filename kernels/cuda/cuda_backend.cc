#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kv_entries.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/devices.h"

namespace kvd::kernels::cuda {
namespace {

// Device memory from cudaMalloc, freed with the buffer.
class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~CudaBuffer() override { cudaFree(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

// Staged arrays start at multiples of this, so that every element type is aligned.
constexpr size_t kStagingAlignment = 16;

size_t AlignUp(size_t bytes) {
  return (bytes + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
}

KvSlot SlotOf(const int32_t* block_table, int32_t entry, int32_t block_size) {
  return KvSlot{block_table[entry / block_size]} * block_size + entry % block_size;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const BackendOptions& options) {
  if (options.weight_dtype == DType::kF16) {
    return absl::InvalidArgumentError(
        "backend 'cuda': f16 weights are not supported; use bf16 or f32");
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" error
    return absl::FailedPreconditionError("backend 'cuda': no CUDA device is visible");
  }
  auto failed = [](const char* call, const char* message) {
    return absl::UnavailableError(absl::StrCat("backend 'cuda': ", call, ": ", message));
  };
  if (cudaError_t e = cudaSetDevice(0); e != cudaSuccess) {
    return failed("cudaSetDevice", cudaGetErrorString(e));
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return failed("cudaStreamCreateWithFlags", cudaGetErrorString(e));
  }
  cublasHandle_t blas = nullptr;
  if (cublasStatus_t s = cublasCreate(&blas); s != CUBLAS_STATUS_SUCCESS) {
    cudaStreamDestroy(stream);
    return failed("cublasCreate", cublasGetStatusString(s));
  }
  if (cublasStatus_t s = cublasSetStream(blas, stream); s != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
    return failed("cublasSetStream", cublasGetStatusString(s));
  }
  return std::unique_ptr<CudaBackend>(new CudaBackend(stream, blas, options.weight_dtype));
}

size_t CudaBackend::MemoryBytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  staging_.Free();
  cublasDestroy(blas_);
  cudaStreamDestroy(stream_);
}

bool CudaBackend::Check(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return true;
  if (error_.ok()) {
    error_ = absl::InternalError(absl::StrCat("cuda: ", call, ": ", cudaGetErrorString(error)));
  }
  return false;
}

bool CudaBackend::Check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  if (error_.ok()) {
    error_ =
        absl::InternalError(absl::StrCat("cublas: ", call, ": ", cublasGetStatusString(status)));
  }
  return false;
}

void CudaBackend::CheckLaunch(const char* kernel) { Check(cudaGetLastError(), kernel); }

absl::Status CudaBackend::TakeError() {
  Check(cudaGetLastError(), "a kernel launch");
  return std::exchange(error_, absl::OkStatus());
}

template <typename T>
size_t CudaBackend::Staging::Add(std::span<const T> values) {
  const size_t offset = AlignUp(host_.size());
  host_.resize(offset + values.size_bytes());
  if (!values.empty()) std::memcpy(host_.data() + offset, values.data(), values.size_bytes());
  added_end_ = host_.size();
  return offset;
}

size_t CudaBackend::Staging::Reserve(size_t bytes) {
  const size_t offset = AlignUp(host_.size());
  host_.resize(offset + bytes);
  return offset;
}

bool CudaBackend::Staging::Upload(CudaBackend& backend) {
  const size_t bytes = host_.size();
  if (bytes > capacity_) {
    Free();  // cudaFree waits for the work that may still read the old buffer
    const size_t grown = std::max(bytes, 2 * capacity_);
    if (!backend.Check(cudaMalloc(&device_, grown), "cudaMalloc (staging)")) {
      device_ = nullptr;
      host_.clear();
      added_end_ = 0;
      return false;
    }
    capacity_ = grown;
  }
  // From pageable memory the copy is staged before it returns, so the host array may change.
  const bool ok =
      added_end_ == 0 || backend.Check(cudaMemcpyAsync(device_, host_.data(), added_end_,
                                                       cudaMemcpyHostToDevice, backend.stream_),
                                       "cudaMemcpyAsync (staging)");
  host_.clear();
  added_end_ = 0;
  return ok;
}

void CudaBackend::Staging::Free() {
  if (device_ != nullptr) cudaFree(device_);
  device_ = nullptr;
  capacity_ = 0;
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CudaBackend::Allocate(size_t bytes) {
  void* data = nullptr;
  if (cudaError_t e = cudaMalloc(&data, std::max<size_t>(bytes, 1)); e != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat("cuda: cudaMalloc of ", bytes, " bytes: ", cudaGetErrorString(e)));
  }
  return std::make_unique<CudaBuffer>(data, bytes);
}

bool CudaBackend::KeepsBf16(const Tensor& host) const {
  if (host.rows <= 1) return false;
  return weight_dtype_ ? *weight_dtype_ == DType::kBF16 : host.dtype == DType::kBF16;
}

uint16_t* CudaBackend::Bf16Scratch(int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(uint16_t);
  if (bf16_scratch_ == nullptr || bf16_scratch_->size() < bytes) {
    bf16_scratch_.reset();  // cudaFree waits for the work still reading it
    auto buffer = Allocate(bytes);
    if (!buffer.ok()) {
      if (error_.ok()) error_ = buffer.status();
      return nullptr;
    }
    bf16_scratch_ = *std::move(buffer);
  }
  return static_cast<uint16_t*>(bf16_scratch_->data());
}

absl::StatusOr<PreparedWeight> CudaBackend::PrepareWeight(const Tensor& host) {
  const auto* src = static_cast<const unsigned char*>(host.data);
  const size_t n = static_cast<size_t>(host.num_elements());
  if (KeepsBf16(host)) {
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i) {
      if (host.dtype == DType::kF32) {
        float value;
        std::memcpy(&value, src + 4 * i, sizeof(value));
        bits[i] = FloatToBF16(value);
      } else {
        uint16_t raw;
        std::memcpy(&raw, src + 2 * i, sizeof(raw));
        bits[i] = host.dtype == DType::kBF16 ? raw : FloatToBF16(F16ToFloat(raw));
      }
    }
    auto buffer = Allocate(n * sizeof(uint16_t));
    if (!buffer.ok()) return buffer.status();
    Tensor tensor{(*buffer)->data(), DType::kBF16, host.rows, host.cols};
    if (cudaError_t e =
            cudaMemcpy(tensor.data, bits.data(), tensor.num_bytes(), cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      return absl::InternalError(
          absl::StrCat("cuda: cudaMemcpy (weight): ", cudaGetErrorString(e)));
    }
    return PreparedWeight{tensor, *std::move(buffer)};
  }
  std::vector<float> converted(n);
  if (host.dtype == DType::kF32) {
    std::memcpy(converted.data(), src, host.num_bytes());
  } else {
    for (size_t i = 0; i < converted.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, src + 2 * i, sizeof(bits));  // may be misaligned in the file
      converted[i] = host.dtype == DType::kBF16 ? BF16ToFloat(bits) : F16ToFloat(bits);
    }
  }
  auto buffer = Allocate(converted.size() * sizeof(float));
  if (!buffer.ok()) return buffer.status();
  Tensor tensor{(*buffer)->data(), DType::kF32, host.rows, host.cols};
  if (cudaError_t e =
          cudaMemcpy(tensor.data, converted.data(), tensor.num_bytes(), cudaMemcpyHostToDevice);
      e != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cuda: cudaMemcpy (weight): ", cudaGetErrorString(e)));
  }
  return PreparedWeight{tensor, *std::move(buffer)};
}

void CudaBackend::CopyToHost(const Tensor& src, float* dst) {
  if (Check(cudaMemcpyAsync(dst, src.data, src.num_bytes(), cudaMemcpyDeviceToHost, stream_),
            "cudaMemcpyAsync (to host)")) {
    Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
}

void CudaBackend::CopyFromHost(const float* src, Tensor dst) {
  Check(cudaMemcpyAsync(dst.data, src, dst.num_bytes(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (from host)");
}

void CudaBackend::GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) {
  if (indices.empty()) return;
  const size_t at = staging_.Add(indices);
  if (!staging_.Upload(*this)) return;
  const auto* device_indices = static_cast<const int32_t*>(staging_.Device(at));
  if (table.dtype == DType::kBF16) {
    LaunchGatherRowsBf16(static_cast<const uint16_t*>(table.data), table.cols, device_indices,
                         static_cast<int64_t>(indices.size()), out.f32(), stream_);
  } else {
    LaunchGatherRows(table.f32(), table.cols, device_indices, static_cast<int64_t>(indices.size()),
                     out.f32(), stream_);
  }
  CheckLaunch("GatherRows");
}

void CudaBackend::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) {
  LaunchRmsNorm(x.f32(), weight.f32(), x.rows, x.cols, eps, out.f32(), stream_);
  CheckLaunch("RmsNorm");
}

void CudaBackend::Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) {
  if (x.rows == 0) return;
  // Row-major out[rows, n] = x[rows, k] · W[n, k]ᵀ is column-major outᵀ = op(W)·xᵀ with W read
  // as the column-major [k, n] matrix it is, transposed.
  const float one = 1.0f, zero = 0.0f;
  const int n = static_cast<int>(weight.rows), k = static_cast<int>(weight.cols);
  const int m = static_cast<int>(x.rows);
  if (weight.dtype == DType::kBF16) {
    // bf16 × bf16 with fp32 accumulation into the f32 output; x rounded to bf16 first.
    uint16_t* x_bf16 = Bf16Scratch(x.num_elements());
    if (x_bf16 == nullptr) return;
    LaunchToBf16(x.f32(), x.num_elements(), x_bf16, stream_);
    CheckLaunch("ToBf16");
    if (!Check(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, weight.data,
                            CUDA_R_16BF, k, x_bf16, CUDA_R_16BF, k, &zero, out.f32(), CUDA_R_32F, n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (bf16)")) {
      return;
    }
  } else if (!Check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, weight.f32(), k,
                                x.f32(), k, &zero, out.f32(), n),
                    "cublasSgemm")) {
    return;
  }
  if (bias != nullptr) {
    LaunchAddBias(out.f32(), bias->f32(), out.rows, out.cols, stream_);
    CheckLaunch("AddBias");
  }
}

void CudaBackend::ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                            std::span<const float> inv_freq) {
  if (x.rows == 0) return;
  const size_t at_positions = staging_.Add(positions);
  const size_t at_freq = staging_.Add(inv_freq);
  if (!staging_.Upload(*this)) return;
  LaunchApplyRope(x.f32(), x.rows, num_heads, static_cast<int32_t>(x.cols / num_heads),
                  static_cast<const int32_t*>(staging_.Device(at_positions)),
                  static_cast<const float*>(staging_.Device(at_freq)), stream_);
  CheckLaunch("ApplyRope");
}

void CudaBackend::SiluMul(const Tensor& gate, const Tensor& up, Tensor out) {
  LaunchSiluMul(gate.f32(), up.f32(), out.num_elements(), out.f32(), stream_);
  CheckLaunch("SiluMul");
}

void CudaBackend::Add(Tensor x, const Tensor& y) {
  LaunchAdd(x.f32(), y.f32(), x.num_elements(), stream_);
  CheckLaunch("Add");
}

void CudaBackend::AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                           std::span<const SequenceKvRef> sequences) {
  std::vector<int32_t> rows, heads;
  std::vector<int64_t> slots;
  for (const SequenceKvRef& seq : sequences) {
    for (size_t h = 0; h < seq.block_tables.size(); ++h) {
      for (int32_t i = 0; i < seq.num_rows; ++i) {
        rows.push_back(seq.first_row + i);
        heads.push_back(static_cast<int32_t>(h));
        slots.push_back(SlotOf(seq.block_tables[h], seq.cached_lengths[h] + i, pool.block_size));
      }
    }
  }
  if (slots.empty()) return;
  const size_t at_rows = staging_.Add(std::span<const int32_t>(rows));
  const size_t at_heads = staging_.Add(std::span<const int32_t>(heads));
  const size_t at_slots = staging_.Add(std::span<const int64_t>(slots));
  if (!staging_.Upload(*this)) return;
  LaunchAppendKv(k.f32(), v.f32(), k.cols, static_cast<const int32_t*>(staging_.Device(at_rows)),
                 static_cast<const int32_t*>(staging_.Device(at_heads)),
                 static_cast<const int64_t*>(staging_.Device(at_slots)),
                 static_cast<int64_t>(slots.size()), pool, stream_);
  CheckLaunch("AppendKv");
}

void CudaBackend::CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                              std::span<const KvSlot> dst) {
  if (src.empty()) return;
  const size_t at_src = staging_.Add(src);
  const size_t at_dst = staging_.Add(dst);
  if (!staging_.Upload(*this)) return;
  LaunchCopyKvSlots(static_cast<const int64_t*>(staging_.Device(at_src)),
                    static_cast<const int64_t*>(staging_.Device(at_dst)),
                    static_cast<int64_t>(src.size()), pool, stream_);
  CheckLaunch("CopyKvSlots");
}

void CudaBackend::ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots, float* keys,
                              float* values, float* log_votes) {
  if (slots.empty()) return;
  const size_t vector_bytes = slots.size() * static_cast<size_t>(pool.head_dim) * sizeof(float);
  const size_t at_slots = staging_.Add(slots);
  const size_t at_keys = staging_.Reserve(vector_bytes);
  const size_t at_values = staging_.Reserve(vector_bytes);
  const size_t at_votes = staging_.Reserve(slots.size() * sizeof(float));
  if (!staging_.Upload(*this)) return;
  auto* device_keys = static_cast<float*>(staging_.Device(at_keys));
  auto* device_values = static_cast<float*>(staging_.Device(at_values));
  auto* device_votes = static_cast<float*>(staging_.Device(at_votes));
  LaunchGatherKvSlots(static_cast<const int64_t*>(staging_.Device(at_slots)),
                      static_cast<int64_t>(slots.size()), pool, device_keys, device_values,
                      device_votes, stream_);
  CheckLaunch("GatherKvSlots");
  const std::pair<void*, const float*> copies[] = {
      {keys, device_keys}, {values, device_values}, {log_votes, device_votes}};
  for (const auto& [dst, src] : copies) {
    const size_t bytes = dst == log_votes ? slots.size() * sizeof(float) : vector_bytes;
    if (!Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (kv to host)")) {
      return;
    }
  }
  Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaBackend::WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                               const float* values, const float* log_votes) {
  if (slots.empty()) return;
  const size_t vector_floats = slots.size() * static_cast<size_t>(pool.head_dim);
  const size_t at_slots = staging_.Add(slots);
  const size_t at_keys = staging_.Add(std::span<const float>(keys, vector_floats));
  const size_t at_values = staging_.Add(std::span<const float>(values, vector_floats));
  const size_t at_votes = staging_.Add(std::span<const float>(log_votes, slots.size()));
  if (!staging_.Upload(*this)) return;
  LaunchScatterKvSlots(static_cast<const int64_t*>(staging_.Device(at_slots)),
                       static_cast<int64_t>(slots.size()),
                       static_cast<const float*>(staging_.Device(at_keys)),
                       static_cast<const float*>(staging_.Device(at_values)),
                       static_cast<const float*>(staging_.Device(at_votes)), pool, stream_);
  CheckLaunch("ScatterKvSlots");
}

void CudaBackend::Attention(const Tensor& q, const KvPool& pool,
                            std::span<const SequenceKvRef> sequences, const AttentionShape& shape,
                            Tensor out) {
  std::vector<AttentionTask> tasks;
  std::vector<int32_t> tables;
  int32_t max_rows = 0;
  for (const SequenceKvRef& seq : sequences) {
    if (seq.num_rows == 0) continue;
    max_rows = std::max(max_rows, seq.num_rows);
    for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
      const int32_t entries = seq.cached_lengths[h] + seq.num_rows;
      const int32_t blocks = (entries + pool.block_size - 1) / pool.block_size;
      AttentionTask task;
      task.q_first_row = seq.first_row;
      task.num_rows = seq.num_rows;
      task.kv_head = h;
      task.cached_length = seq.cached_lengths[h];
      task.table_offset = static_cast<int64_t>(tables.size());
      if (seq.scores.scores != nullptr) {
        task.scores = seq.scores.scores + static_cast<int64_t>(h) * seq.scores.stride;
        task.score_first_row = seq.scores.first_row;
        task.reduce_max = seq.scores.reduce == ScoreReduce::kMax ? 1 : 0;
      }
      tables.insert(tables.end(), seq.block_tables[h], seq.block_tables[h] + blocks);
      tasks.push_back(task);
    }
  }
  if (tasks.empty()) return;
  const size_t at_tasks = staging_.Add(std::span<const AttentionTask>(tasks));
  const size_t at_tables = staging_.Add(std::span<const int32_t>(tables));
  if (!staging_.Upload(*this)) return;
  LaunchPagedAttention(q.f32(), pool, static_cast<const AttentionTask*>(staging_.Device(at_tasks)),
                       static_cast<int32_t>(tasks.size()), max_rows,
                       static_cast<const int32_t*>(staging_.Device(at_tables)), shape, q.cols,
                       out.f32(), stream_);
  CheckLaunch("PagedAttention");
}

}  // namespace kvd::kernels::cuda

namespace kvd::kernels {

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const BackendOptions& options) {
  auto backend = cuda::CudaBackend::Create(options);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(*std::move(backend));
}

}  // namespace kvd::kernels
