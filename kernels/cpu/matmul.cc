#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "base/check.h"

namespace kvd::kernels::cpu {
namespace {

// Σ over block b of row o of the integer products, and the block's scale (and offset) term:
// the sum is scale_w · scale_x · Σ q_w q_x (+ offset_w · scale_x · Σ q_x).
float QuantizedBlockProduct(const MatmulArgs& a, int64_t r, int64_t o, int64_t b) {
  const QuantizedActivations& act = *a.activations;
  const int8_t* xq = act.q.data() + r * act.in + b * kQuantBlock;
  const float x_scale = act.scales[r * act.blocks_per_row() + b];
  const ConstQuantizedRow row = ViewQuantizedRow(
      a.dtype, static_cast<const unsigned char*>(a.weight) + o * RowBytes(a.dtype, a.in), a.in);
  const float scale = F16ToFloat(row.scales[b]) * x_scale;
  int32_t dot = 0;
  if (a.dtype == DType::kInt8) {
    const auto* q = reinterpret_cast<const int8_t*>(row.q + b * kQuantBlock);
    for (int64_t i = 0; i < kQuantBlock; ++i) dot += int32_t{q[i]} * xq[i];
    return static_cast<float>(dot) * scale;
  }
  const uint8_t* q = row.q + b * (kQuantBlock / 2);
  for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
    dot += (q[j] & 15) * xq[j] + (q[j] >> 4) * xq[j + kQuantBlock / 2];
  }
  return static_cast<float>(dot) * scale +
         F16ToFloat(row.offsets[b]) * act.sums[r * act.blocks_per_row() + b];
}

void RunScalar(const MatmulArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.in;
    for (int64_t o = a.first; o < a.first + a.count; ++o) {
      float sum = 0.0f;
      if (IsQuantized(a.dtype)) {
        for (int64_t b = 0; b < a.in / kQuantBlock; ++b) sum += QuantizedBlockProduct(a, r, o, b);
      } else {
        for (int64_t i = 0; i < a.in; ++i)
          sum += x[i] * ElementAsFloat(a.weight, a.dtype, o * a.in + i);
      }
      a.out[r * a.out_stride + o] = sum;
    }
  }
}

void RunOpenBlas(const MatmulArgs& a) {
  KVD_CHECK(a.dtype == DType::kF32);

  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(a.rows),
              static_cast<int>(a.count), static_cast<int>(a.in), 1.0f, a.x, static_cast<int>(a.in),
              static_cast<const float*>(a.weight) + a.first * a.in, static_cast<int>(a.in), 0.0f,
              a.out + a.first, static_cast<int>(a.out_stride));
}

// Multiply-adds below which a product runs on one thread, and the fewest output features worth
// a slice of their own.
constexpr int64_t kMinParallelWork = int64_t{1} << 20;
constexpr int64_t kMinSliceFeatures = 64;
// Activations quantized on the calling thread below this many, else on the pool.
constexpr int64_t kMinParallelQuantize = int64_t{1} << 16;

// x of `whole` in int8 blocks, in a buffer of the calling thread's reused across products.
const QuantizedActivations& QuantizeInput(const MatmulArgs& whole, ThreadPool& pool) {
  thread_local QuantizedActivations buffer;
  // The pool's threads fill this thread's buffer: a lambda naming `buffer` would reach theirs.
  QuantizedActivations& activations = buffer;
  ResizeActivations(whole.rows, whole.in, activations);
  if (whole.rows * whole.in < kMinParallelQuantize || whole.rows == 1) {
    QuantizeActivationRows(whole.x, 0, whole.rows, activations);
  } else {
    pool.ParallelFor(whole.rows, [&](int64_t begin, int64_t end) {
      QuantizeActivationRows(whole.x, begin, end - begin, activations);
    });
  }
  return activations;
}

}  // namespace

MatmulVariant ScalarMatmul() { return {"scalar", RunScalar}; }
MatmulVariant OpenBlasMatmul() {
  // Each call runs on one thread; ParallelMatmul spreads slices over the pool instead.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
  return {"openblas", RunOpenBlas};
}

void ParallelMatmul(const MatmulVariant& variant, const MatmulArgs& given, ThreadPool& pool) {
  KVD_CHECK(given.first == 0);
  MatmulArgs whole = given;
  if (IsQuantized(whole.dtype)) {
    KVD_CHECK(whole.activations == nullptr);
    whole.activations = &QuantizeInput(whole, pool);
  }
  const int64_t out_features = whole.count;
  // Slices rather than one BLAS call on many threads: OpenBLAS's threads spin-wait for each
  // other and stall for seconds when the cores are shared, where a slice nobody has claimed yet
  // is simply taken by a running thread.
  const int64_t slices = whole.rows * whole.in * out_features < kMinParallelWork
                             ? 1
                             : std::clamp<int64_t>(out_features / kMinSliceFeatures, 1,
                                                   int64_t{pool.num_threads()} * 4);
  const auto slice_start = [&](int64_t slice) {
    return slice == slices ? out_features : out_features / 4 * slice / slices * 4;
  };
  if (slices == 1) return variant.run(whole);
  pool.ParallelFor(slices, [&](int64_t slice_begin, int64_t slice_end) {
    MatmulArgs part = whole;
    part.first = slice_start(slice_begin);
    part.count = slice_start(slice_end) - part.first;
    variant.run(part);
  });
}

std::vector<MatmulVariant> MatmulVariants(const CpuFeatures& features) {
  std::vector<MatmulVariant> variants;
  if (features.avx512 && features.avx512_vnni) variants.push_back(Avx512Matmul());
  if (features.avx2) variants.push_back(Avx2Matmul());
  variants.push_back(ScalarMatmul());
  return variants;
}

}  // namespace kvd::kernels::cpu
