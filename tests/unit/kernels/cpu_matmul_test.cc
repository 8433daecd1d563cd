// Every matmul variant this CPU runs against the scalar reference, for each weight type, on
// shapes with tails (inputs not a multiple of the vector width, slices not a multiple of the
// tile) and slices that start inside the matrix; and OpenBLAS's for f32.
#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

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

TEST(CpuMatmulTest, EveryVariantMatchesTheScalarReference) {
  std::vector<MatmulVariant> variants = MatmulVariants(HostCpuFeatures());
  ASSERT_EQ(variants.back().name, "scalar");
  variants.push_back(OpenBlasMatmul());

  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const MatmulVariant& variant : variants) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      if (variant.name == "openblas" && dtype != DType::kF32) continue;
      for (int64_t rows : {1, 2, 3, 5}) {
        for (int64_t in : {8, 37, 64, 200}) {
          const int64_t out_features = 23;
          const Weights weights = RandomWeights(out_features * in, dtype, random);
          std::vector<float> x(rows * in);
          for (float& v : x) v = normal(random);
          for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 23}, {4, 8}, {5, 13}}) {
            std::vector<float> expected(rows * out_features, -1.0f), got = expected;
            MatmulArgs args{.x = x.data(),
                            .rows = rows,
                            .in = in,
                            .weight = weights.data(dtype),
                            .dtype = dtype,
                            .first = first,
                            .count = count,
                            .out = expected.data(),
                            .out_stride = out_features};
            ScalarMatmul().run(args);
            args.out = got.data();
            variant.run(args);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t o = 0; o < out_features; ++o) {
                const float want = expected[r * out_features + o];
                const float have = got[r * out_features + o];
                if (o < first || o >= first + count) {
                  EXPECT_EQ(have, -1.0f) << "wrote outside the slice";
                  continue;
                }
                // Sums of `in` products of unit normals, added in another order.
                EXPECT_NEAR(have, want, 1e-5 * in)
                    << variant.name << " " << DTypeName(dtype) << " rows " << rows << " in "
                    << in << " o " << o;
              }
            }
          }
        }
      }
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
  for (const MatmulVariant& variant : MatmulVariants(HostCpuFeatures())) {
    for (auto [dtype, data] : {std::pair<DType, const void*>{DType::kBF16, bf16.data()},
                               {DType::kF16, f16.data()}}) {
      std::vector<float> out(4);
      variant.run({.x = x.data(), .rows = 1, .in = in, .weight = data, .dtype = dtype,
                   .first = 0, .count = 4, .out = out.data(), .out_stride = 4});
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
