// Every matmul variant this CPU runs against the scalar reference, for each weight type, on
// shapes with tails (inputs not a multiple of the vector width, slices not a multiple of the
// tile), slices that start inside the matrix, enough rows for a packed GEMM (full and partial
// tiles of rows, panels of output features), and products larger than one pass over the caches
// (the GEMM's blocks of rows and panels of inputs); and OpenBLAS's for f32. Quantized formats:
// every variant against the scalar reference on the same quantized activations, and the whole
// product against f32 within what quantization allows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/matmul.h"

namespace kvd::kernels::cpu {
namespace {

// The matmul variants this CPU runs, fastest first, the scalar reference last.
std::vector<MatmulVariant> VariantsHere() {
  std::vector<MatmulVariant> variants;
  for (const KernelVariant<MatmulVariant>& v : AllKernels().matmul.RunnableHere()) {
    variants.push_back(v.kernel);
  }
  return variants;
}

struct Weights {
  std::vector<float> f32;
  std::vector<uint16_t> half;  // bf16 or f16 bits

  const void* data(DType dtype) const {
    return dtype == DType::kF32 ? static_cast<const void*>(f32.data()) : half.data();
  }
};

Weights RandomWeights(int64_t count, DType dtype, std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Weights w;
  for (int64_t i = 0; i < count; ++i) {
    const float value = normal(random);
    w.f32.push_back(value);
    w.half.push_back(dtype == DType::kF16 ? FloatToF16(value) : FloatToBF16(value));
  }
  return w;
}

// Runs `args` (out unset) on the scalar reference and on `variant` into outputs prefilled with
// -1, and expects the slice to agree within `tolerance` and nothing outside it to be written.
// Where the variant rounds x to bf16, the reference multiplies the rounded x. The variant reads x,
// and element-type weights, from copies followed by NaNs, so that a load past the last row that
// a mask should have cut turns an output into NaN.
void ExpectVariantMatchesScalar(const MatmulVariant& variant, MatmulArgs args, int64_t out_features,
                                double tolerance, const std::string& label) {
  std::vector<float> padded_x(args.x, args.x + args.rows * args.in);
  padded_x.resize(padded_x.size() + 64, std::nanf(""));
  std::vector<unsigned char> padded_weight;
  if (!IsQuantized(args.dtype)) {
    const auto* weight = static_cast<const unsigned char*>(args.weight);
    padded_weight.assign(weight, weight + out_features * RowBytes(args.dtype, args.in));
    padded_weight.resize(padded_weight.size() + 256, 0xff);  // NaN in every element type
  }
  std::vector<float> expected(args.rows * out_features, -1.0f), got = expected;
  std::vector<float> rounded_x;
  MatmulArgs reference = args;
  if (RoundsRowsToBf16(variant, args.dtype, args.rows)) {
    for (int64_t i = 0; i < args.rows * args.in; ++i) {
      rounded_x.push_back(BF16ToFloat(FloatToBF16(args.x[i])));
    }
    reference.x = rounded_x.data();
  }
  reference.out = expected.data();
  reference.out_stride = out_features;
  ScalarMatmul().run(reference);
  args.x = padded_x.data();
  if (!padded_weight.empty()) args.weight = padded_weight.data();
  args.out = got.data();
  args.out_stride = out_features;
  variant.run(args);
  for (int64_t i = 0; i < args.rows * out_features; ++i) {
    const int64_t o = i % out_features;
    if (o < args.first || o >= args.first + args.count) {
      EXPECT_EQ(got[i], -1.0f) << "wrote outside the slice: " << label;
    } else {
      EXPECT_NEAR(got[i], expected[i], tolerance) << label << " o " << o;
    }
  }
}

TEST(CpuMatmulTest, EveryVariantMatchesTheScalarReference) {
  std::vector<MatmulVariant> variants = VariantsHere();
  ASSERT_EQ(variants.back().name, "scalar");
  variants.push_back(OpenBlasMatmul());

  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const MatmulVariant& variant : variants) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      if (variant.name == "openblas" && dtype != DType::kF32) continue;
      for (int64_t rows : {1, 2, 3, 5, 8, 10, 17, 40, 47, 127, 130}) {
        // Inputs that end a bf16 pair step (32) past its first sixteen: 57.
        for (int64_t in : {8, 37, 57, 64, 200}) {
          const int64_t out_features = 101;
          const Weights weights = RandomWeights(out_features * in, dtype, random);
          std::vector<float> x(rows * in);
          for (float& v : x) v = normal(random);
          for (auto [first, count] :
               {std::pair<int64_t, int64_t>{0, 101}, {4, 8}, {5, 13}, {16, 64}, {3, 77}}) {
            // Sums of `in` products of unit normals, added in another order.
            ExpectVariantMatchesScalar(variant,
                                       {.x = x.data(),
                                        .rows = rows,
                                        .in = in,
                                        .weight = weights.data(dtype),
                                        .dtype = dtype,
                                        .first = first,
                                        .count = count},
                                       out_features, 1e-5 * in,
                                       std::string(variant.name) + " " +
                                           std::string(DTypeName(dtype)) + " rows " +
                                           std::to_string(rows) + " in " + std::to_string(in));
          }
        }
      }
    }
  }
}

// A random [out_features, in] matrix of unit normals quantized to `format`, and the f32
// matrix it stands for.
struct QuantizedWeights {
  std::vector<unsigned char> blocks;
  std::vector<float> dequantized;
};

QuantizedWeights RandomQuantized(DType format, int64_t out_features, int64_t in,
                                 std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  QuantizedWeights w;
  w.blocks.resize(static_cast<size_t>(out_features) * RowBytes(format, in));
  w.dequantized.resize(static_cast<size_t>(out_features * in));
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t o = 0; o < out_features; ++o) {
    for (float& v : row) v = normal(random);
    unsigned char* blocks = w.blocks.data() + o * RowBytes(format, in);
    EXPECT_TRUE(QuantizeRow(format, row.data(), in, blocks));
    DequantizeRow(format, blocks, in, w.dequantized.data() + o * in);
  }
  return w;
}

TEST(CpuMatmulTest, QuantizedVariantsMatchTheScalarReference) {
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const MatmulVariant& variant : VariantsHere()) {
    for (DType format : {DType::kInt8, DType::kInt4}) {
      // Tiles of rows, and from 16 rows on a packed GEMM's (tiles of four and what is left).
      for (int64_t rows : {1, 2, 3, 5, 9, 15, 17, 18, 33, 47}) {
        // 1 to 19 blocks: steps of two or four blocks cut short, and a second chunk of 16 blocks
        // (the tiles' combined scales, the GEMM's packed ones).
        for (int64_t in : {32, 64, 96, 256, 320, 608}) {
          // A whole panel of 48 features and part of one.
          const int64_t out_features = 53;
          const QuantizedWeights weights = RandomQuantized(format, out_features, in, random);
          std::vector<float> x(rows * in);
          for (float& v : x) v = normal(random);
          QuantizedActivations activations;
          ResizeActivations(rows, in, activations);
          QuantizeActivationRows(x.data(), 0, rows, activations);
          for (auto [first, count] :
               {std::pair<int64_t, int64_t>{0, 53}, {4, 8}, {5, 13}, {1, 40}, {2, 30}}) {
            // The same integer dot products per block, scaled and summed in another order.
            ExpectVariantMatchesScalar(variant,
                                       {.x = x.data(),
                                        .activations = &activations,
                                        .rows = rows,
                                        .in = in,
                                        .weight = weights.blocks.data(),
                                        .dtype = format,
                                        .first = first,
                                        .count = count},
                                       out_features, 1e-5 * in,
                                       std::string(variant.name) + " " +
                                           std::string(DTypeName(format)) + " rows " +
                                           std::to_string(rows) + " in " + std::to_string(in));
          }
        }
      }
    }
  }
}

TEST(CpuMatmulTest, ProductsLargerThanTheCachesMatchTheScalarReference) {
  // Variants cut a large product into passes over blocks of rows and of inputs (whose partial
  // sums later passes add to) and tiles of several widths: more rows and inputs than one pass
  // holds (the packed GEMM's blocks of 1,024 rows, the AMX one's of 256; its panels of 1,024 f32
  // or 2,048 bf16 inputs, an odd count past the last, and of 128 blocks, a few past the last), and
  // output features that leave a remainder of every tile width; the same inputs on a few rows,
  // which the tiles (not a packed GEMM) cut into passes; and 52 rows, an AMX tile of 32 rows and
  // one of 20 whose second A tile is partial, added to after the first panel of inputs.
  std::mt19937 random(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // A panel of 48 features and 5 more (partial panels of three vectors and of one, each added to
  // after the first panel of inputs); element types' tiles: 8 of 6 features, one of 4, one alone.
  const int64_t out_features = 53;
  for (const MatmulVariant& variant : VariantsHere()) {
    if (variant.name == "scalar") continue;
    for (const auto& [rows, dtype] : {std::pair<int64_t, DType>{1030, DType::kF32},
                                      {1030, DType::kBF16},
                                      {9, DType::kBF16},
                                      {52, DType::kBF16},
                                      {260, DType::kF16},
                                      {1030, DType::kInt8},
                                      {1030, DType::kInt4}}) {
      const int64_t in = IsQuantized(dtype) ? 131 * kQuantBlock : 2501;
      std::vector<float> x(rows * in);
      for (float& v : x) v = normal(random);
      QuantizedActivations activations;
      if (IsQuantized(dtype)) {
        ResizeActivations(rows, in, activations);
        QuantizeActivationRows(x.data(), 0, rows, activations);
      }
      const Weights weights = RandomWeights(out_features * in, dtype, random);
      const QuantizedWeights blocks = IsQuantized(dtype)
                                          ? RandomQuantized(dtype, out_features, in, random)
                                          : QuantizedWeights{};
      ExpectVariantMatchesScalar(
          variant,
          {.x = x.data(),
           .activations = IsQuantized(dtype) ? &activations : nullptr,
           .rows = rows,
           .in = in,
           .weight = IsQuantized(dtype) ? blocks.blocks.data() : weights.data(dtype),
           .dtype = dtype,
           .first = 0,
           .count = out_features},
          out_features, 1e-5 * in,
          std::string(variant.name) + " " + std::string(DTypeName(dtype)) + " rows " +
              std::to_string(rows));
    }
  }
}

TEST(CpuMatmulTest, QuantizedProductsStayCloseToTheF32Product) {
  // Through ParallelMatmul, which quantizes the activations itself, against the f32 product of
  // the dequantized weights: the difference is then the activations' rounding alone, half a
  // step (max|x| / 254) per input, whose errors add as a random walk.
  std::mt19937 random(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  // Enough rows that the activations are quantized on the pool, and enough products that the
  // output features are split across it.
  const int64_t rows = 80, in = 1024, out_features = 300;
  std::vector<float> x(rows * in);
  for (float& v : x) v = normal(random);
  for (DType format : {DType::kInt8, DType::kInt4}) {
    const QuantizedWeights weights = RandomQuantized(format, out_features, in, random);
    std::vector<float> got(rows * out_features), want(rows * out_features);
    const MatmulArgs whole{.x = x.data(),
                           .rows = rows,
                           .in = in,
                           .weight = weights.blocks.data(),
                           .dtype = format,
                           .first = 0,
                           .count = out_features,
                           .out = got.data(),
                           .out_stride = out_features};
    ParallelMatmul(HostKernels().matmul.kernel, whole, pool);
    ScalarMatmul().run({.x = x.data(),
                        .rows = rows,
                        .in = in,
                        .weight = weights.dequantized.data(),
                        .dtype = DType::kF32,
                        .first = 0,
                        .count = out_features,
                        .out = want.data(),
                        .out_stride = out_features});
    double squared_error = 0.0, squared_value = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      squared_error += (got[i] - want[i]) * (got[i] - want[i]);
      squared_value += want[i] * want[i];
    }
    // Relative RMS error: for unit normals a block's max is ~2.2 σ, so the rounding error of an
    // input has σ ≈ 2.2 / 254 / √3 ≈ 0.005 of its scale; the product's error relative to the
    // product's size is then about that: allow 0.02.
    EXPECT_LT(std::sqrt(squared_error / squared_value), 0.02) << DTypeName(format);
  }
}

TEST(CpuMatmulTest, HalfProductsOnThePoolMatchTheScalarReference) {
  // Through ParallelMatmul on two threads, enough work that each cuts several slices: every
  // thread rounds its own copy of the rows where the variant rounds them.
  std::mt19937 random(14);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t in = 1000, out_features = 300;
  const MatmulVariant variant = HostKernels().matmul.kernel;
  for (int64_t rows : {9, 16, 100}) {
    std::vector<float> x(rows * in);
    for (float& v : x) v = normal(random);
    const Weights weights = RandomWeights(out_features * in, DType::kBF16, random);
    std::vector<float> got(rows * out_features), want(rows * out_features);
    MatmulArgs args{.x = x.data(),
                    .rows = rows,
                    .in = in,
                    .weight = weights.data(DType::kBF16),
                    .dtype = DType::kBF16,
                    .first = 0,
                    .count = out_features,
                    .out = got.data(),
                    .out_stride = out_features};
    ParallelMatmul(variant, args, pool);
    if (RoundsRowsToBf16(variant, DType::kBF16, rows)) {
      for (float& v : x) v = BF16ToFloat(FloatToBF16(v));
    }
    args.out = want.data();
    ScalarMatmul().run(args);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5 * in) << variant.name << " rows " << rows;
    }
  }
}

TEST(CpuMatmulTest, HalfWeightsAreReadAsTheirExactValues) {
  // Weights exactly representable in bf16 and f16, and inputs that are powers of two: every
  // product and partial sum is exact, so each variant must give exactly the sum.
  const int64_t in = 48;
  std::vector<float> values;
  std::vector<uint16_t> bf16, f16;
  for (int64_t i = 0; i < 4 * in; ++i) {
    values.push_back(static_cast<float>((i % 7) - 3) * 0.25f);
    bf16.push_back(FloatToBF16(values.back()));
    f16.push_back(FloatToF16(values.back()));
  }
  std::vector<float> x(in);
  for (int64_t i = 0; i < in; ++i) x[i] = (i % 2 == 0) ? 2.0f : -0.5f;
  for (const MatmulVariant& variant : VariantsHere()) {
    for (auto [dtype, data] :
         {std::pair<DType, const void*>{DType::kBF16, bf16.data()}, {DType::kF16, f16.data()}}) {
      std::vector<float> out(4);
      variant.run({.x = x.data(),
                   .rows = 1,
                   .in = in,
                   .weight = data,
                   .dtype = dtype,
                   .first = 0,
                   .count = 4,
                   .out = out.data(),
                   .out_stride = 4});
      for (int64_t o = 0; o < 4; ++o) {
        float sum = 0.0f;
        for (int64_t i = 0; i < in; ++i) sum += x[i] * values[o * in + i];
        EXPECT_EQ(out[o], sum) << variant.name << " " << DTypeName(dtype);
      }
    }
  }
}

TEST(CpuMatmulTest, FeaturesAreDescribed) {
  const CpuFeatures& features = HostCpuFeatures();
  const std::string described = features.ToString();
  EXPECT_FALSE(described.empty());
  // Every wider set implies the narrower ones.
  EXPECT_TRUE(!features.avx512 || features.avx2);
  EXPECT_TRUE(!(features.avx512_bf16 || features.avx512_vnni || features.amx_bf16) ||
              features.avx512);
  EXPECT_EQ(described == "none", !features.avx2);
}

}  // namespace
}  // namespace kvd::kernels::cpu
