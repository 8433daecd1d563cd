#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/host_memory.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/kv_entries.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/top_logits.h"

namespace kvd::kernels::cpu {
namespace {

int32_t ResolveThreads(int32_t requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
}

// Rows are split across threads only when each thread gets at least this many elements.
constexpr int64_t kMinElementsPerTask = 1 << 14;
// f32 projections of more rows than this run on OpenBLAS's SGEMM where our variant is not the
// faster (MatmulVariant::f32_gemm); 16-bit weights always run on our kernels, which beat
// converting them for SGEMM at every row count measured (docs/benchmarks.md, "CPU weight formats
// and matmul kernels").
constexpr int64_t kMaxOwnMatmulRowsF32 = 16;
// Bytes of a weight one thread copies at a time.
constexpr int64_t kCopyChunkBytes = int64_t{1} << 20;

}  // namespace

std::string CpuKernelSummary() {
  const CpuFeatures& features = HostCpuFeatures();
  const HostKernelChoice& kernels = HostKernels();
  return absl::StrCat("cpu: ", features.brand.empty() ? "" : absl::StrCat(features.brand, ", "),
                      std::thread::hardware_concurrency(), " threads; features ",
                      features.ToString(), "; ",
                      kernels.Describe(kernels.matmul.kernel.f32_gemm
                                           ? ""
                                           : absl::StrCat(" (f32 over ", kMaxOwnMatmulRowsF32,
                                                          " rows: OpenBLAS)")));
}

std::string CpuBackend::KernelSummary() const {
  const std::string weights =
      weight_dtype_ ? std::string(DTypeName(*weight_dtype_)) : "as in the checkpoint";
  return absl::StrCat(CpuKernelSummary(), "; weights ", weights, "; ", pool_.num_threads(),
                      " threads");
}

CpuBackend::CpuBackend(const BackendOptions& options)
    : pool_(ResolveThreads(options.num_threads)),
      weight_dtype_(options.weight_dtype),
      matmul_(HostKernels().matmul.kernel),
      blas_(OpenBlasMatmul()),
      rms_norm_(HostKernels().rms_norm.kernel),
      silu_mul_(HostKernels().silu_mul.kernel) {}

size_t CpuBackend::MemoryBytes() const { return UsableHostMemoryBytes(); }

absl::StatusOr<std::unique_ptr<DeviceBuffer>> CpuBackend::Allocate(size_t bytes) {
  return AllocateResident(bytes, pool_);
}

DType CpuBackend::KeptType(const Tensor& host, std::optional<DType> dtype) const {
  if (host.rows <= 1) return DType::kF32;
  const DType configured = dtype.value_or(weight_dtype_.value_or(host.dtype));
  if (IsQuantized(configured) && host.cols % kQuantBlock != 0) return host.dtype;
  return configured;
}

absl::StatusOr<PreparedWeight> CpuBackend::PrepareWeight(const Tensor& host,
                                                         std::optional<DType> dtype) {
  const DType kept = KeptType(host, dtype);
  Tensor converted{nullptr, kept, host.rows, host.cols};
  auto buffer = Allocate(converted.num_bytes());
  if (!buffer.ok()) return buffer.status();
  converted.data = (*buffer)->data();
  if (IsQuantized(kept)) {
    if (absl::Status s = Quantize(host, converted); !s.ok()) return s;
    return PreparedWeight{converted, *std::move(buffer)};
  }
  // Copied even where the checkpoint's bytes would do: the mapped file's small pages cost a
  // decode step more than a third of its speed in TLB misses (docs/benchmarks.md, "Resident
  // memory in huge pages").
  const auto* src = static_cast<const unsigned char*>(host.data);
  auto* dst = static_cast<unsigned char*>(converted.data);
  if (host.dtype == kept) {
    const int64_t bytes = host.num_bytes();
    pool_.ParallelFor(
        (bytes + kCopyChunkBytes - 1) / kCopyChunkBytes, [&](int64_t begin, int64_t end) {
          const int64_t first = begin * kCopyChunkBytes;
          std::memcpy(dst + first, src + first, std::min(bytes, end * kCopyChunkBytes) - first);
        });
    return PreparedWeight{converted, *std::move(buffer)};
  }
  pool_.ParallelFor(host.num_elements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float value = ElementAsFloat(src, host.dtype, i);
      if (kept == DType::kF32) {
        std::memcpy(dst + 4 * i, &value, sizeof(value));
      } else {
        const uint16_t bits = kept == DType::kBF16 ? FloatToBF16(value) : FloatToF16(value);
        std::memcpy(dst + 2 * i, &bits, sizeof(bits));
      }
    }
  });
  return PreparedWeight{converted, *std::move(buffer)};
}

absl::Status CpuBackend::Quantize(const Tensor& host, const Tensor& quantized) {
  std::atomic<bool> representable = true;
  pool_.ParallelFor(host.rows, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(host.cols));
    for (int64_t r = begin; r < end && representable; ++r) {
      for (int64_t i = 0; i < host.cols; ++i) {
        row[i] = ElementAsFloat(host.data, host.dtype, r * host.cols + i);
      }
      if (!QuantizeRow(quantized.dtype, row.data(), host.cols, quantized.Rows(r, 1).data)) {
        representable = false;
      }
    }
  });
  if (representable) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("cpu: a [", host.rows, ", ", host.cols, "] weight cannot be held in ",
                   std::string(DTypeName(quantized.dtype)),
                   ": a value is not finite or a block's scale exceeds f16"));
}

void CpuBackend::CopyToHost(const Tensor& src, float* dst) {
  std::memcpy(dst, src.data, src.num_bytes());
}

void CpuBackend::CopyFromHost(const float* src, Tensor dst) {
  std::memcpy(dst.data, src, dst.num_bytes());
}

void CpuBackend::GatherRows(const Tensor& table, std::span<const int32_t> indices, Tensor out) {
  const int64_t width = table.cols;
  for (size_t i = 0; i < indices.size(); ++i) {
    float* dst = out.f32() + i * width;
    const void* row = table.Rows(indices[i], 1).data;
    if (table.dtype == DType::kF32) {
      std::memcpy(dst, row, width * sizeof(float));
    } else if (IsQuantized(table.dtype)) {
      DequantizeRow(table.dtype, row, width, dst);
    } else {
      for (int64_t j = 0; j < width; ++j) dst[j] = ElementAsFloat(row, table.dtype, j);
    }
  }
}

void CpuBackend::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) {
  const int64_t width = x.cols;
  const int64_t grain = std::max<int64_t>(1, kMinElementsPerTask / width);
  const int64_t tasks = (x.rows + grain - 1) / grain;
  pool_.ParallelFor(tasks, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t row = task_begin * grain; row < std::min(x.rows, task_end * grain); ++row) {
      rms_norm_(x.f32() + row * width, weight.f32(), eps, out.f32() + row * width, width);
    }
  });
}

const MatmulVariant& CpuBackend::MatmulFor(const Tensor& weight, int64_t rows) const {
  const bool blas = weight.dtype == DType::kF32 && rows > kMaxOwnMatmulRowsF32 && !matmul_.f32_gemm;
  return blas ? blas_ : matmul_;
}

MatmulProduct CpuBackend::ProductFor(const Tensor& x, const Tensor& weight, Tensor out) const {
  KVD_CHECK(x.cols == weight.cols && out.rows == x.rows && out.cols == weight.rows);
  return MatmulProduct{&MatmulFor(weight, x.rows), MatmulArgs{.x = x.f32(),
                                                              .rows = x.rows,
                                                              .in = x.cols,
                                                              .weight = weight.data,
                                                              .dtype = weight.dtype,
                                                              .first = 0,
                                                              .count = weight.rows,
                                                              .out = out.f32(),
                                                              .out_stride = weight.rows}};
}

void CpuBackend::Linear(const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor out) {
  const Projection projection{&weight, bias, out};
  LinearGroup(x, {&projection, 1});
}

void CpuBackend::LinearGroup(const Tensor& x, std::span<const Projection> projections) {
  absl::InlinedVector<MatmulProduct, 3> products;
  for (const Projection& projection : projections) {
    products.push_back(ProductFor(x, *projection.weight, projection.out));
  }
  ParallelMatmul(products, pool_, [&](std::span<const MatmulArgs> parts) {
    for (size_t i = 0; i < parts.size(); ++i) {
      const Tensor* bias = projections[i].bias;
      if (bias == nullptr) continue;
      const MatmulArgs& part = parts[i];
      for (int64_t r = 0; r < part.rows; ++r) {
        float* dst = part.out + r * part.out_stride;
        for (int64_t o = part.first; o < part.first + part.count; ++o) dst[o] += bias->f32()[o];
      }
    }
  });
}

void CpuBackend::GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight,
                             Tensor up, Tensor out) {
  KVD_CHECK(gate_weight.rows == up_weight.rows && up.rows == out.rows && up.cols == out.cols);
  const MatmulProduct products[] = {ProductFor(x, gate_weight, out), ProductFor(x, up_weight, up)};
  // Both products have the same width, so each slice holds the same features of gate and up.
  ParallelMatmul(products, pool_, [&](std::span<const MatmulArgs> parts) {
    const MatmulArgs& gate = parts[0];
    const MatmulArgs& up_part = parts[1];
    for (int64_t r = 0; r < gate.rows; ++r) {
      float* gated = gate.out + r * gate.out_stride + gate.first;
      silu_mul_(gated, up_part.out + r * up_part.out_stride + gate.first, gated, gate.count);
    }
  });
}

void CpuBackend::ApplyRope(Tensor x, int32_t num_heads, std::span<const int32_t> positions,
                           std::span<const float> inv_freq) {
  const int64_t half = x.cols / num_heads / 2;
  KVD_CHECK(std::ssize(inv_freq) >= half && std::ssize(positions) == x.rows);
  base::MutexLock lock(rope_mu_);
  rope_table_.Update(positions, inv_freq.first(static_cast<size_t>(half)), pool_);
  rope_table_.Rotate(x, num_heads, pool_);
}

void CpuBackend::SiluMul(const Tensor& gate, const Tensor& up, Tensor out) {
  const int64_t count = gate.num_elements();
  pool_.ParallelFor((count + kMinElementsPerTask - 1) / kMinElementsPerTask, [&](int64_t task_begin,
                                                                                 int64_t task_end) {
    const int64_t begin = task_begin * kMinElementsPerTask;
    const int64_t end = std::min(count, task_end * kMinElementsPerTask);
    silu_mul_(gate.f32() + begin, up.f32() + begin, out.f32() + begin, end - begin);
  });
}

void CpuBackend::Add(Tensor x, const Tensor& y) {
  const int64_t count = x.num_elements();
  for (int64_t i = 0; i < count; ++i) x.f32()[i] += y.f32()[i];
}

absl::Status CpuBackend::CheckKvCacheType(DType dtype) const {
  if (dtype == DType::kF32 || dtype == DType::kBF16) return absl::OkStatus();
  return Backend::CheckKvCacheType(dtype);
}

void CpuBackend::AppendKv(const Tensor& k, const Tensor& v, const KvPool& pool,
                          std::span<const SequenceKvRef> sequences) {
  AppendKvEntries(k, v, pool, sequences);
}

absl::Status CpuBackend::CopyKvSlots(const KvPool& pool, std::span<const KvSlot> src,
                                     std::span<const KvSlot> dst) {
  KVD_CHECK(src.size() == dst.size());
  CopyKvEntries(pool, src, dst);
  return absl::OkStatus();
}

absl::Status CpuBackend::ReadKvSlots(const KvPool& pool, std::span<const KvSlot> slots, float* keys,
                                     float* values, float* log_votes) {
  ReadKvEntries(pool, slots, keys, values, log_votes);
  return absl::OkStatus();
}

absl::Status CpuBackend::WriteKvSlots(const KvPool& pool, std::span<const KvSlot> slots,
                                      const float* keys, const float* values,
                                      const float* log_votes) {
  WriteKvEntries(pool, slots, keys, values, log_votes);
  return absl::OkStatus();
}

void CpuBackend::Attention(const Tensor& q, const KvPool& pool,
                           std::span<const SequenceKvRef> sequences, const AttentionShape& shape,
                           Tensor out) {
  PagedAttention(q, pool, sequences, shape, out, pool_);
}

void CpuBackend::TopLogits(const Tensor& logits, int32_t k,
                           std::span<const float> inverse_temperatures, float* values, int32_t* ids,
                           float* log_normalizers) {
  SelectTopLogits(logits, k, inverse_temperatures, values, ids, log_normalizers, pool_);
}

}  // namespace kvd::kernels::cpu
