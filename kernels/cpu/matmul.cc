#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "base/check.h"

namespace kvd::kernels::cpu {
namespace {

// OpenBLAS runs each call on the calling thread alone from the first call of this on;
// ParallelMatmul spreads slices over the pool instead.
void KeepOpenBlasSingleThreaded() {
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
}

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
  SingleThreadedSgemm(a.x, a.rows, a.in, static_cast<const float*>(a.weight) + a.first * a.in,
                      a.count, a.out + a.first, a.out_stride);
}

// Multiply-adds below which a product runs on one thread: a hand-off to the pool's spinning
// workers costs about a microsecond (docs/benchmarks.md, "Thread hand-offs that spin").
constexpr int64_t kMinParallelWork = int64_t{1} << 17;
// The fewest output features worth a slice of their own, and of a slice of a variant that packs
// its rows: the packed GEMM transposes the rows' inputs once per slice, and 128-row products of
// [512 x 2048] and [2048 x 8192] ran 1.2x faster in slices of 256-512 features than of 64-256
// (docs/benchmarks.md, "Fused projections").
constexpr int64_t kMinSliceFeatures = 64;
constexpr int64_t kMinPackedSliceFeatures = 512;

// How a group's products are cut: `slices` slices whose starts are multiples of `multiple`.
struct Slicing {
  int64_t slices = 1;
  int64_t multiple = 4;

  int64_t Start(int64_t out_features, int64_t slice) const {
    return slice == slices ? out_features : out_features / multiple * slice / slices * multiple;
  }
};

// Enough slices for every thread, and more for the threads that run to take over from those
// the OS has not scheduled, as long as each slice stays wide enough.
Slicing SliceProducts(const MatmulVariant& variant, DType dtype, int64_t work, int64_t rows,
                      int64_t widest, int32_t threads) {
  if (work < kMinParallelWork) return {};
  const bool packed = variant.packs != nullptr && variant.packs(dtype, rows);
  const int64_t narrowest = packed ? kMinPackedSliceFeatures : kMinSliceFeatures;
  const int64_t fewest = std::clamp<int64_t>(widest / kMinSliceFeatures, 1, threads);
  return {std::clamp<int64_t>(widest / narrowest, fewest, int64_t{threads} * 4),
          packed ? variant.panel_features : 4};
}

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
  KeepOpenBlasSingleThreaded();
  return {"openblas", RunOpenBlas};
}

void SingleThreadedSgemm(const float* x, int64_t rows, int64_t in, const float* weight,
                         int64_t count, float* out, int64_t out_stride) {
  KeepOpenBlasSingleThreaded();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
              static_cast<int>(count), static_cast<int>(in), 1.0f, x, static_cast<int>(in), weight,
              static_cast<int>(in), 0.0f, out, static_cast<int>(out_stride));
}

void ParallelMatmul(std::span<const MatmulProduct> group, ThreadPool& pool, MatmulSliceDone done) {
  KVD_CHECK(!group.empty());
  absl::InlinedVector<MatmulProduct, 3> products(group.begin(), group.end());
  const MatmulArgs& first = products.front().whole;
  const QuantizedActivations* activations = nullptr;
  int64_t work = 0;
  int64_t widest = 0;
  for (MatmulProduct& product : products) {
    MatmulArgs& whole = product.whole;
    KVD_CHECK(whole.first == 0 && whole.activations == nullptr);
    KVD_CHECK(whole.x == first.x && whole.rows == first.rows && whole.in == first.in);
    if (IsQuantized(whole.dtype)) {
      if (activations == nullptr) activations = &QuantizeInput(whole, pool);
      whole.activations = activations;
    }
    work += whole.rows * whole.in * whole.count;
    widest = std::max(widest, whole.count);
  }
  // Slices rather than one BLAS call on many threads: OpenBLAS's threads spin-wait for each
  // other and stall for seconds when the cores are shared, where a slice nobody has claimed yet
  // is simply taken by a running thread.
  const Slicing slicing = SliceProducts(*products.front().variant, first.dtype, work, first.rows,
                                        widest, pool.num_threads());
  const auto run_slices = [&](int64_t slice_begin, int64_t slice_end) {
    absl::InlinedVector<MatmulArgs, 3> parts;
    for (const MatmulProduct& product : products) {
      MatmulArgs part = product.whole;
      part.first = slicing.Start(part.count, slice_begin);
      part.count = slicing.Start(part.count, slice_end) - part.first;
      if (part.count > 0) product.variant->run(part);
      parts.push_back(part);
    }
    done(parts);
  };
  if (slicing.slices == 1) return run_slices(0, 1);
  pool.ParallelFor(slicing.slices, run_slices);
}

void ParallelMatmul(const MatmulVariant& variant, const MatmulArgs& whole, ThreadPool& pool) {
  const MatmulProduct product{&variant, whole};
  ParallelMatmul({&product, 1}, pool, [](std::span<const MatmulArgs>) {});
}

}  // namespace kvd::kernels::cpu
