#include "kernels/cpu/matmul.h"

#include "kernels/check.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>

namespace kvd::kernels::cpu {
namespace {

float WeightAt(const MatmulArgs& a, int64_t index) {
  if (a.dtype == DType::kF32) return static_cast<const float*>(a.weight)[index];
  uint16_t bits;
  std::memcpy(&bits, static_cast<const char*>(a.weight) + 2 * index, sizeof(bits));
  return a.dtype == DType::kBF16 ? BF16ToFloat(bits) : F16ToFloat(bits);
}

void RunScalar(const MatmulArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.in;
    for (int64_t o = a.first; o < a.first + a.count; ++o) {
      float sum = 0.0f;
      for (int64_t i = 0; i < a.in; ++i) sum += x[i] * WeightAt(a, o * a.in + i);
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

}  // namespace

MatmulVariant ScalarMatmul() { return {"scalar", RunScalar}; }
MatmulVariant OpenBlasMatmul() {
  // Each call runs on one thread; ParallelMatmul spreads slices over the pool instead.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
  return {"openblas", RunOpenBlas};
}

void ParallelMatmul(const MatmulVariant& variant, const MatmulArgs& whole, ThreadPool& pool) {
  KVD_CHECK(whole.first == 0);
  const int64_t out_features = whole.count;
  // Slices rather than one BLAS call on many threads: OpenBLAS's threads spin-wait for each
  // other and stall for seconds when the cores are shared, where a slice nobody has claimed yet
  // is simply taken by a running thread.
  const int64_t slices =
      whole.rows * whole.in * out_features < kMinParallelWork
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
  if (features.avx2) variants.push_back(Avx2Matmul());
  variants.push_back(ScalarMatmul());
  return variants;
}

}  // namespace kvd::kernels::cpu
