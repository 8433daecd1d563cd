#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "kernels/cuda/attention_plan.h"
#include "kernels/cuda/attention_scores.cuh"
#include "kernels/cuda/decode_attention.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kv_entries.cuh"
#include "kernels/cuda/prefill_attention.cuh"
#include "kernels/cuda/top_logits.cuh"
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

// Element i of a host tensor as a `half` (bf16 or f16) bit pattern: copied when already one,
// rounded to nearest even otherwise.
uint16_t HostHalfElement(const Tensor& host, DType half, size_t i) {
  if (host.dtype == half) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const unsigned char*>(host.data) + 2 * i, sizeof(bits));
    return bits;
  }
  const float value = ElementAsFloat(host.data, host.dtype, static_cast<int64_t>(i));
  return half == DType::kBF16 ? FloatToBF16(value) : FloatToF16(value);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const BackendOptions& options) {
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
  int multiprocessors = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0);
      e != cudaSuccess) {
    cublasDestroy(blas);
    cudaStreamDestroy(stream);
    return failed("cudaDeviceGetAttribute", cudaGetErrorString(e));
  }
  return std::unique_ptr<CudaBackend>(
      new CudaBackend(stream, blas, options.weight_dtype, multiprocessors));
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
  staging_.Free(*this);
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

void CudaBackend::Synchronize() { Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

absl::Status CudaBackend::TakeError() {
  Check(cudaGetLastError(), "a kernel launch");
  return std::exchange(error_, absl::OkStatus());
}

template <typename T>
size_t CudaBackend::Staging::Add(std::span<const T> values) {
  const size_t offset = Reserve(values.size_bytes());
  if (!values.empty()) pieces_.push_back(Piece{values.data(), values.size_bytes(), offset});
  added_end_ = end_;
  return offset;
}

size_t CudaBackend::Staging::Reserve(size_t bytes) {
  const size_t offset = AlignUp(end_);
  end_ = offset + bytes;
  return offset;
}

bool CudaBackend::Staging::Upload(CudaBackend& backend) {
  const bool ok = GrowDevice(backend, end_) && (added_end_ == 0 || CopyAdded(backend));
  pieces_.clear();
  end_ = 0;
  added_end_ = 0;
  return ok;
}

bool CudaBackend::Staging::CopyAdded(CudaBackend& backend) {
  HostRegion& region = regions_[next_region_];
  next_region_ = (next_region_ + 1) % kHostRegions;
  if (!Prepare(backend, region, added_end_)) return false;
  for (const Piece& piece : pieces_) {
    std::memcpy(region.data + piece.offset, piece.data, piece.bytes);
  }
  return backend.Check(cudaMemcpyAsync(device_, region.data, added_end_, cudaMemcpyHostToDevice,
                                       backend.stream_),
                       "cudaMemcpyAsync (staging)") &&
         backend.Check(cudaEventRecord(region.uploaded, backend.stream_),
                       "cudaEventRecord (staging)");
}

bool CudaBackend::Staging::Prepare(CudaBackend& backend, HostRegion& region, size_t bytes) {
  if (region.uploaded == nullptr &&
      !backend.Check(cudaEventCreateWithFlags(&region.uploaded, cudaEventDisableTiming),
                     "cudaEventCreateWithFlags (staging)")) {
    region.uploaded = nullptr;
    return false;
  }
  // An event never recorded counts as passed.
  if (!backend.Check(cudaEventSynchronize(region.uploaded), "cudaEventSynchronize (staging)")) {
    return false;
  }
  if (bytes <= region.capacity) return true;
  const size_t grown = std::max(bytes, 2 * region.capacity);
  if (region.data != nullptr &&
      !backend.Check(cudaFreeHost(region.data), "cudaFreeHost (staging)")) {
    return false;
  }
  region.data = nullptr;
  region.capacity = 0;
  void* data = nullptr;
  if (!backend.Check(cudaMallocHost(&data, grown), "cudaMallocHost (staging)")) return false;
  region.data = static_cast<char*>(data);
  region.capacity = grown;
  return true;
}

bool CudaBackend::Staging::GrowDevice(CudaBackend& backend, size_t bytes) {
  if (bytes <= device_capacity_) return true;
  const size_t grown = std::max(bytes, 2 * device_capacity_);
  // Queued work may still read the old buffer: wait for it (cudaFree need not).
  if (device_ != nullptr &&
      !(backend.Check(cudaStreamSynchronize(backend.stream_), "cudaStreamSynchronize (staging)") &&
        backend.Check(cudaFree(device_), "cudaFree (staging)"))) {
    return false;
  }
  device_ = nullptr;
  device_capacity_ = 0;
  if (!backend.Check(cudaMalloc(&device_, grown), "cudaMalloc (staging)")) {
    device_ = nullptr;
    return false;
  }
  device_capacity_ = grown;
  return true;
}

void CudaBackend::Staging::Free(CudaBackend& backend) {
  for (HostRegion& region : regions_) {
    if (region.data != nullptr) backend.Check(cudaFreeHost(region.data), "cudaFreeHost (staging)");
    if (region.uploaded != nullptr) {
      backend.Check(cudaEventDestroy(region.uploaded), "cudaEventDestroy (staging)");
    }
    region = HostRegion{};
  }
  if (device_ != nullptr) backend.Check(cudaFree(device_), "cudaFree (staging)");
  device_ = nullptr;
  device_capacity_ = 0;
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

std::optional<DType> CudaBackend::KeptHalfType(const Tensor& host,
                                               std::optional<DType> dtype) const {
  if (host.rows <= 1) return std::nullopt;
  const DType type = dtype.value_or(weight_dtype_.value_or(host.dtype));
  if (type == DType::kF32) return std::nullopt;
  return type;
}

void* CudaBackend::Scratch(std::unique_ptr<DeviceBuffer>& buffer, size_t bytes) {
  if (buffer == nullptr || buffer->size() < bytes) {
    // Queued work may still read the old buffer: wait for it before it is freed.
    if (buffer != nullptr && !Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")) {
      return nullptr;
    }
    buffer.reset();
    auto grown = Allocate(bytes);
    if (!grown.ok()) {
      if (error_.ok()) error_ = grown.status();
      return nullptr;
    }
    buffer = *std::move(grown);
  }
  return buffer->data();
}

absl::StatusOr<PreparedWeight> CudaBackend::PrepareWeight(const Tensor& host,
                                                          std::optional<DType> dtype) {
  if (dtype && IsQuantized(*dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("backend 'cuda' has no kernels for ",
                                                   std::string(DTypeName(*dtype)), " weights"));
  }
  const std::optional<DType> half = KeptHalfType(host, dtype);
  const size_t n = static_cast<size_t>(host.num_elements());
  // The host copy in the device's type; an f32 weight kept in f32 is copied as it is.
  const void* converted = host.data;
  std::vector<uint16_t> half_bits;
  std::vector<float> floats;
  if (half) {
    half_bits.resize(n);
    for (size_t i = 0; i < n; ++i) half_bits[i] = HostHalfElement(host, *half, i);
    converted = half_bits.data();
  } else if (host.dtype != DType::kF32) {
    floats.resize(n);
    for (size_t i = 0; i < n; ++i)
      floats[i] = ElementAsFloat(host.data, host.dtype, static_cast<int64_t>(i));
    converted = floats.data();
  }
  Tensor tensor{nullptr, half.value_or(DType::kF32), host.rows, host.cols};
  auto buffer = Allocate(tensor.num_bytes());
  if (!buffer.ok()) return buffer.status();
  tensor.data = (*buffer)->data();
  if (cudaError_t e =
          cudaMemcpy(tensor.data, converted, tensor.num_bytes(), cudaMemcpyHostToDevice);
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
  const auto count = static_cast<int64_t>(indices.size());
  const auto* half_table = static_cast<const uint16_t*>(table.data);
  switch (table.dtype) {
    case DType::kBF16:
      LaunchGatherRowsBf16(half_table, table.cols, device_indices, count, out.f32(), stream_);
      break;
    case DType::kF16:
      LaunchGatherRowsF16(half_table, table.cols, device_indices, count, out.f32(), stream_);
      break;
    case DType::kF32:
      LaunchGatherRows(table.f32(), table.cols, device_indices, count, out.f32(), stream_);
      break;
    case DType::kInt8:
    case DType::kInt4:
      KVD_CHECK(false);  // CreateBackend refuses quantized weights for CUDA
  }
  CheckLaunch("GatherRows");
}

void CudaBackend::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) {
  LaunchRmsNorm(x.f32(), weight.f32(), x.rows, x.cols, eps, out.f32(), stream_);
  CheckLaunch("RmsNorm");
}

const void* CudaBackend::RoundToHalf(const Tensor& x, DType type) {
  auto* x_half = static_cast<uint16_t*>(
      Scratch(half_scratch_, static_cast<size_t>(x.num_elements()) * sizeof(uint16_t)));
  if (x_half == nullptr) return nullptr;
  const bool bf16 = type == DType::kBF16;
  if (bf16) {
    LaunchToBf16(x.f32(), x.num_elements(), x_half, stream_);
  } else {
    LaunchToF16(x.f32(), x.num_elements(), x_half, stream_);
  }
  CheckLaunch(bf16 ? "ToBf16" : "ToF16");
  return x_half;
}

void CudaBackend::Project(const Tensor& x, const void* x_half, const Tensor& weight,
                          const Tensor* bias, Tensor out) {
  // Row-major out[rows, n] = x[rows, k] · W[n, k]ᵀ is column-major outᵀ = op(W)·xᵀ with W read
  // as the column-major [k, n] matrix it is, transposed.
  const float one = 1.0f, zero = 0.0f;
  const int n = static_cast<int>(weight.rows), k = static_cast<int>(weight.cols);
  const int m = static_cast<int>(x.rows);
  if (weight.dtype != DType::kF32) {
    // 16-bit × 16-bit with fp32 accumulation into the f32 output.
    KVD_CHECK(x_half != nullptr);
    const bool bf16 = weight.dtype == DType::kBF16;
    const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    if (!Check(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, weight.data, type, k,
                            x_half, type, k, &zero, out.f32(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
               bf16 ? "cublasGemmEx (bf16)" : "cublasGemmEx (f16)")) {
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

void CudaBackend::Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) {
  const Projection projection{&weight, bias, out};
  LinearGroup(x, {&projection, 1});
}

void CudaBackend::LinearGroup(const Tensor& x, std::span<const Projection> projections) {
  if (x.rows == 0) return;
  // The rounding of x stays valid for the next product of the same type: the stream runs the
  // products queued after it before any later rounding overwrites it.
  std::optional<DType> rounded_type;
  const void* x_half = nullptr;
  for (const Projection& projection : projections) {
    // A later product of the group reads x (or its rounding) after this one has written.
    KVD_CHECK(projection.out.data != x.data);
    const DType type = projection.weight->dtype;
    if (type != DType::kF32 && rounded_type != type) {
      x_half = RoundToHalf(x, type);
      if (x_half == nullptr) return;
      rounded_type = type;
    }
    Project(x, x_half, *projection.weight, projection.bias, projection.out);
  }
}

void CudaBackend::GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight,
                              Tensor up, Tensor out) {
  const Projection projections[] = {{&gate_weight, nullptr, out}, {&up_weight, nullptr, up}};
  LinearGroup(x, projections);
  SiluMul(out, up, out);
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

absl::Status CudaBackend::CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                                      std::span<const KvSlot> dst) {
  KVD_CHECK(src.size() == dst.size());
  if (src.empty()) return absl::OkStatus();
  const size_t at_src = staging_.Add(src);
  const size_t at_dst = staging_.Add(dst);
  if (!staging_.Upload(*this)) return TakeError();
  LaunchCopyKvSlots(static_cast<const int64_t*>(staging_.Device(at_src)),
                    static_cast<const int64_t*>(staging_.Device(at_dst)),
                    static_cast<int64_t>(src.size()), pool, stream_);
  CheckLaunch("CopyKvSlots");
  return TakeError();
}

absl::Status CudaBackend::ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots,
                                      float* keys, float* values, float* log_votes) {
  if (slots.empty()) return absl::OkStatus();
  const size_t vector_bytes = slots.size() * static_cast<size_t>(pool.head_dim) * sizeof(float);
  const size_t at_slots = staging_.Add(slots);
  const size_t at_keys = staging_.Reserve(vector_bytes);
  const size_t at_values = staging_.Reserve(vector_bytes);
  const size_t at_votes = staging_.Reserve(slots.size() * sizeof(float));
  if (!staging_.Upload(*this)) return TakeError();
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
      return TakeError();
    }
  }
  Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return TakeError();
}

absl::Status CudaBackend::WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots,
                                       const float* keys, const float* values,
                                       const float* log_votes) {
  if (slots.empty()) return absl::OkStatus();
  const size_t vector_floats = slots.size() * static_cast<size_t>(pool.head_dim);
  const size_t at_slots = staging_.Add(slots);
  const size_t at_keys = staging_.Add(std::span<const float>(keys, vector_floats));
  const size_t at_values = staging_.Add(std::span<const float>(values, vector_floats));
  const size_t at_votes = staging_.Add(std::span<const float>(log_votes, slots.size()));
  if (!staging_.Upload(*this)) return TakeError();
  LaunchScatterKvSlots(static_cast<const int64_t*>(staging_.Device(at_slots)),
                       static_cast<int64_t>(slots.size()),
                       static_cast<const float*>(staging_.Device(at_keys)),
                       static_cast<const float*>(staging_.Device(at_values)),
                       static_cast<const float*>(staging_.Device(at_votes)), pool, stream_);
  CheckLaunch("ScatterKvSlots");
  return TakeError();
}

void CudaBackend::Attention(const Tensor& q, const KvPool& pool,
                            std::span<const SequenceKvRef> sequences, const AttentionShape& shape,
                            Tensor out) {
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0 || shape.head_dim <= 0 ||
      shape.head_dim % 4 != 0 || shape.head_dim > kMaxAttentionHeadDim) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(
          absl::StrCat("cuda: attention takes heads of a multiple of 4 dimensions up to ",
                       kMaxAttentionHeadDim, " and whole kv groups, not ", shape.num_heads,
                       " heads over ", shape.num_kv_heads, " kv heads of ", shape.head_dim));
    }
    return;
  }
  const AttentionPlan plan = PlanAttention(pool, sequences, shape, multiprocessors_);
  if (std::max({plan.prefill_tiles, plan.score_entry_tiles, plan.score_row_blocks}) >
      kMaxGridDimension) {
    if (error_.ok()) {
      error_ = absl::InvalidArgumentError(
          "cuda: an attention step has more rows or entries than one launch covers");
    }
    return;
  }
  float* lse = nullptr;  // the rows' log-sum-exps, which the scores are computed from
  if (!plan.scores.empty()) {
    lse = static_cast<float*>(
        Scratch(attention_lse_, static_cast<size_t>(q.rows) * shape.num_heads * sizeof(float)));
    if (lse == nullptr) return;
  }
  float* partials = nullptr;
  if (plan.decode_partitions > 1) {
    const int64_t floats = DecodePartialFloats(plan.decode_partial_partitions, shape);
    partials =
        static_cast<float*>(Scratch(decode_partials_, static_cast<size_t>(floats) * sizeof(float)));
    if (partials == nullptr) return;
  }
  const size_t at_decode = staging_.Add(std::span<const AttentionTask>(plan.decode));
  const size_t at_prefill = staging_.Add(std::span<const AttentionTask>(plan.prefill));
  const size_t at_scores = staging_.Add(std::span<const ScoreTask>(plan.scores));
  const size_t at_tables = staging_.Add(std::span<const int32_t>(plan.tables));
  if (!staging_.Upload(*this)) return;
  const auto* tables = static_cast<const int32_t*>(staging_.Device(at_tables));
  if (!plan.decode.empty()) {
    LaunchDecodeAttention(
        q.f32(), pool, static_cast<const AttentionTask*>(staging_.Device(at_decode)),
        static_cast<int32_t>(plan.decode.size()), tables, shape, q.cols, plan.decode_partition,
        plan.decode_partitions, partials, out.f32(), lse, stream_);
    CheckLaunch("DecodeAttention");
  }
  if (!plan.prefill.empty()) {
    if (!Check(LaunchPrefillAttention(
                   q.f32(), pool, static_cast<const AttentionTask*>(staging_.Device(at_prefill)),
                   static_cast<int32_t>(plan.prefill.size()), plan.prefill_tiles, tables, shape,
                   q.cols, out.f32(), lse, stream_),
               "cudaFuncSetAttribute (prefill attention)")) {
      return;
    }
    CheckLaunch("PrefillAttention");
  }
  if (!plan.scores.empty()) {
    if (!Check(LaunchAttentionScores(
                   q.f32(), pool, static_cast<const ScoreTask*>(staging_.Device(at_scores)),
                   static_cast<int32_t>(plan.scores.size()), plan.score_entry_tiles,
                   plan.score_row_blocks, tables, shape, q.cols, lse, stream_),
               "cudaFuncSetAttribute (attention scores)")) {
      return;
    }
    CheckLaunch("AttentionScores");
  }
}

void CudaBackend::TopLogits(const Tensor& logits, int32_t k,
                            std::span<const float> inverse_temperatures, float* values,
                            int32_t* ids, float* log_normalizers) {
  if (logits.rows == 0) return;
  // The results lie together on the device (values, ids, normalizers), so one copy brings them.
  const size_t count = static_cast<size_t>(logits.rows) * k;
  const size_t value_bytes = count * sizeof(float), id_bytes = count * sizeof(int32_t);
  const size_t normalizer_bytes = static_cast<size_t>(logits.rows) * 2 * sizeof(float);
  const size_t at_temperatures = staging_.Add(inverse_temperatures);
  const size_t at_results = staging_.Reserve(value_bytes + id_bytes + normalizer_bytes);
  if (!staging_.Upload(*this)) return;
  auto* results = static_cast<char*>(staging_.Device(at_results));
  LaunchTopLogits(
      logits.f32(), static_cast<int32_t>(logits.rows), static_cast<int32_t>(logits.cols), k,
      static_cast<const float*>(staging_.Device(at_temperatures)),
      reinterpret_cast<float*>(results), reinterpret_cast<int32_t*>(results + value_bytes),
      reinterpret_cast<float*>(results + value_bytes + id_bytes), stream_);
  CheckLaunch("TopLogits");
  top_logits_host_.resize(value_bytes + id_bytes + normalizer_bytes);
  if (!Check(cudaMemcpyAsync(top_logits_host_.data(), results, top_logits_host_.size(),
                             cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (top logits to host)") ||
      !Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")) {
    return;
  }
  std::memcpy(values, top_logits_host_.data(), value_bytes);
  std::memcpy(ids, top_logits_host_.data() + value_bytes, id_bytes);
  std::memcpy(log_normalizers, top_logits_host_.data() + value_bytes + id_bytes, normalizer_bytes);
}

}  // namespace kvd::kernels::cuda

namespace kvd::kernels {

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const BackendOptions& options) {
  auto backend = cuda::CudaBackend::Create(options);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Backend>(*std::move(backend));
}

}  // namespace kvd::kernels
