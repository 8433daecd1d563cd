// The CUDA backend's row-wise and element-wise kernels (kernels/cuda/elementwise_kernels.cuh) run
// on the CPU through the CUDA emulation, against the CPU backend's ops (kernels/dtype.h's
// conversions for the 16-bit roundings, Linear's bias add for AddBias), over random inputs with
// special values mixed in and row widths below, at and above a block's threads. Results must
// match bit for bit, except where a test says why and by how much they may differ. Needs no
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/dtype.h"
#include "tests/support/kernel_test_values.h"
#include "tests/unit/kernels/cuda_emulation/elementwise_launches.h"

namespace kvd::kernels::cuda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kF16Max = 65504.0f;
// One unit in the last place of a float in [1, 2).
constexpr float kUlp = 0x1p-23f;

Tensor F32(std::vector<float>& values, int64_t rows, int64_t cols) {
  return Tensor{values.data(), DType::kF32, rows, cols};
}

bool IsF16NaN(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0; }

class CudaElementwiseKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    random_.seed(seed_);
  }

  std::vector<float> Random(size_t n, float scale = 1.0f) {
    return RandomNormals(random_, n, scale);
  }

  // Floats of every kind: random bit patterns (NaNs, infinities and subnormals among them),
  // values around f16's range, and the roundings' edge cases.
  std::vector<float> AnyFloats(size_t n) {
    std::vector<float> values = Random(n, 1000.0f);
    std::uniform_int_distribution<uint32_t> bits;
    for (size_t i = 0; i < n; i += 3) values[i] = std::bit_cast<float>(bits(random_));
    // Ties of bf16 (1 + 2^-8, 1 + 3 * 2^-8) and f16 (1 + 2^-11, 1 + 3 * 2^-11, 2^-25, 3 * 2^-25)
    // rounding, f16's largest value, its overflow and its subnormals, a signalling NaN.
    constexpr float kMax = std::numeric_limits<float>::max();
    const float signalling_nan = std::bit_cast<float>(0x7f800001u);
    const float specials[] = {
        0.0f,      -0.0f,     kInf,      -kInf,      kNaN,       -kNaN,    kMax,          -kMax,
        0x1p-149f, 0x1.01p0f, 0x1.03p0f, 0x1.002p0f, 0x1.006p0f, 0x1p-25f, 0x1.8p-25f,    0x1p-24f,
        0x1p-14f,  kF16Max,   65519.99f, 65520.0f,   -65520.0f,  1e6f,     signalling_nan};
    std::copy(std::begin(specials), std::end(specials), values.begin());
    return values;
  }

  std::vector<int32_t> RandomIndices(size_t n, int32_t bound) {
    std::uniform_int_distribution<int32_t> index(0, bound - 1);
    std::vector<int32_t> indices(n);
    for (int32_t& i : indices) i = index(random_);
    return indices;
  }

  std::string Trace() const { return "seed " + std::to_string(seed_); }

  uint32_t seed_ = 0;
  std::mt19937 random_;
  cpu::CpuBackend cpu_{BackendOptions{.num_threads = 1}};
};

// Bit-equal floats, or both NaN where `any_nan` (a conversion that need not keep the payload).
void ExpectSameFloats(const std::vector<float>& actual, const std::vector<float>& expected,
                      bool any_nan, const std::string& trace) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (any_nan && std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i << ", " << trace;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(actual[i]), std::bit_cast<uint32_t>(expected[i]))
          << i << ": " << actual[i] << " vs " << expected[i] << ", " << trace;
    }
  }
}

TEST_F(CudaElementwiseKernelsTest, GatherRowsMatchesTheCpu) {
  constexpr int64_t kTableRows = 37, kCount = 50;
  // Narrower than a warp, and wider than a block.
  for (int64_t cols : {int64_t{20}, int64_t{300}}) {
    const std::vector<float> widened = AnyFloats(static_cast<size_t>(kTableRows * cols));
    std::vector<float> f32 = widened;
    std::vector<uint16_t> bf16(f32.size()), f16(f32.size());
    for (size_t i = 0; i < f32.size(); ++i) {
      bf16[i] = FloatToBF16(f32[i]);
      f16[i] = FloatToF16(f32[i]);
    }
    std::vector<int32_t> indices = RandomIndices(kCount, kTableRows);
    const size_t out_size = static_cast<size_t>(kCount * cols);
    const auto gather_on_cpu = [&](void* table, DType dtype) {
      auto prepared = cpu_.PrepareWeight(Tensor{table, dtype, kTableRows, cols});
      EXPECT_TRUE(prepared.ok()) << prepared.status();
      std::vector<float> out(out_size);
      cpu_.GatherRows(prepared->tensor, indices, F32(out, kCount, cols));
      return out;
    };
    std::vector<float> actual(out_size, kNaN);
    ASSERT_TRUE(
        emulation::EmulateGatherRows(f32.data(), cols, indices.data(), kCount, actual.data()).ok());
    ExpectSameFloats(actual, gather_on_cpu(f32.data(), DType::kF32), false, Trace());
    ASSERT_TRUE(
        emulation::EmulateGatherRowsBf16(bf16.data(), cols, indices.data(), kCount, actual.data())
            .ok());
    ExpectSameFloats(actual, gather_on_cpu(bf16.data(), DType::kBF16), false, Trace());
    // The device's f16 widening need not keep a NaN's payload.
    ASSERT_TRUE(
        emulation::EmulateGatherRowsF16(f16.data(), cols, indices.data(), kCount, actual.data())
            .ok());
    ExpectSameFloats(actual, gather_on_cpu(f16.data(), DType::kF16), true, Trace());
  }
}

TEST_F(CudaElementwiseKernelsTest, ToBf16RoundsAsTheEngineDoes) {
  const std::vector<float> x = AnyFloats(3000);
  std::vector<uint16_t> actual(x.size(), 0xdeadu);
  ASSERT_TRUE(
      emulation::EmulateToBf16(x.data(), static_cast<int64_t>(x.size()), actual.data()).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(actual[i], FloatToBF16(x[i])) << i << ": " << x[i] << ", " << Trace();
  }
}

TEST_F(CudaElementwiseKernelsTest, ToF16RoundsAsTheEngineDoesAndSaturates) {
  const std::vector<float> x = AnyFloats(3000);
  std::vector<uint16_t> actual(x.size(), 0xdeadu);
  ASSERT_TRUE(
      emulation::EmulateToF16(x.data(), static_cast<int64_t>(x.size()), actual.data()).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    // Finite values beyond f16's range saturate instead of becoming inf; the device's NaN
    // need not have the engine's payload.
    const float saturated = std::isfinite(x[i]) ? std::clamp(x[i], -kF16Max, kF16Max) : x[i];
    const uint16_t expected = FloatToF16(saturated);
    if (IsF16NaN(expected)) {
      EXPECT_TRUE(IsF16NaN(actual[i])) << i << ", " << Trace();
    } else {
      EXPECT_EQ(actual[i], expected) << i << ": " << x[i] << ", " << Trace();
    }
  }
}

TEST_F(CudaElementwiseKernelsTest, RmsNormMatchesTheCpu) {
  constexpr int64_t kRows = 5;
  constexpr float kEps = 1e-5f;
  // One warp, several, and more columns than a block's threads.
  for (int64_t cols : {int64_t{32}, int64_t{300}, int64_t{2048}}) {
    std::vector<float> x = Random(static_cast<size_t>(kRows * cols), 3.0f);
    std::vector<float> weight = Random(static_cast<size_t>(cols));
    std::vector<float> expected(x.size()), actual(x.size(), kNaN);
    cpu_.RmsNorm(F32(x, kRows, cols), F32(weight, 1, cols), kEps, F32(expected, kRows, cols));
    ASSERT_TRUE(
        emulation::EmulateRmsNorm(x.data(), weight.data(), kRows, cols, kEps, actual.data()).ok());
    std::vector<float> in_place = x;
    ASSERT_TRUE(emulation::EmulateRmsNorm(in_place.data(), weight.data(), kRows, cols, kEps,
                                          in_place.data())
                    .ok());
    // The squares are added in another order (each thread's stride, then across the block),
    // so the inverse RMS may round to the neighbouring float: 2 ulps.
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_LE(std::abs(actual[i] - expected[i]), 2 * kUlp * std::abs(expected[i]))
          << "cols " << cols << " at " << i << ", " << Trace();
      EXPECT_EQ(in_place[i], actual[i]) << "in place, cols " << cols << " at " << i;
    }
  }
}

TEST_F(CudaElementwiseKernelsTest, RopeMatchesTheCpu) {
  constexpr int64_t kRows = 6;
  struct Shape {
    int32_t heads, head_dim;
  };
  // Half a head narrower than a warp, a warp, and wider than a block.
  for (const Shape shape : {Shape{4, 48}, Shape{2, 64}, Shape{1, 640}}) {
    const int64_t cols = int64_t{shape.heads} * shape.head_dim;
    std::vector<float> x = Random(static_cast<size_t>(kRows * cols));
    std::vector<int32_t> positions = RandomIndices(kRows, 131072);
    positions[0] = 0;
    std::vector<float> inv_freq(shape.head_dim / 2);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      inv_freq[i] = static_cast<float>(std::pow(500000.0, -2.0 * i / shape.head_dim));
    }
    std::vector<float> expected = x, actual = x;
    cpu_.ApplyRope(F32(expected, kRows, cols), shape.heads, positions, inv_freq);
    ASSERT_TRUE(emulation::EmulateApplyRope(actual.data(), kRows, shape.heads, shape.head_dim,
                                            positions.data(), inv_freq.data())
                    .ok());
    // The kernel rounds sin and cos from double (CUDA's within 2 ulps of double), the CPU takes
    // f32 sinf and cosf (glibc's within 1 ulp): either may be a float ulp off the exact value,
    // which moves a rotated coordinate by up to about 2^-23 of the pair's magnitude.
    const int32_t half = shape.head_dim / 2;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int32_t h = 0; h < shape.heads; ++h) {
        const int64_t head = r * cols + int64_t{h} * shape.head_dim;
        for (int32_t i = 0; i < shape.head_dim; ++i) {
          const float pair = std::abs(x[head + i % half]) + std::abs(x[head + i % half + half]);
          EXPECT_LE(std::abs(actual[head + i] - expected[head + i]), 4 * kUlp * pair)
              << "head_dim " << shape.head_dim << " row " << r << " head " << h << " dim " << i
              << ", " << Trace();
        }
      }
    }
  }
}

TEST_F(CudaElementwiseKernelsTest, SiluMulMatchesTheCpu) {
  constexpr int64_t kCount = 3000;
  std::vector<float> gate = Random(kCount, 4.0f), up = Random(kCount);
  gate[0] = 0.0f;
  gate[1] = -100.0f;  // exp overflows to inf: silu is -0
  gate[2] = 100.0f;
  std::vector<float> expected(kCount), actual(kCount, kNaN);
  cpu_.SiluMul(F32(gate, 1, kCount), F32(up, 1, kCount), F32(expected, 1, kCount));
  ASSERT_TRUE(emulation::EmulateSiluMul(gate.data(), up.data(), kCount, actual.data()).ok());
  std::vector<float> in_place = gate;
  ASSERT_TRUE(emulation::EmulateSiluMul(in_place.data(), up.data(), kCount, in_place.data()).ok());
  // The emulation calls the host's expf, as the CPU does; the device's is within 2 ulps
  // (CUDA's libdevice), which a quotient and a product can take to 4.
  for (int64_t i = 0; i < kCount; ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), 4 * kUlp * std::abs(expected[i]))
        << i << ": gate " << gate[i] << ", " << Trace();
    EXPECT_EQ(in_place[i], actual[i]) << "in place, at " << i;
  }
}

TEST_F(CudaElementwiseKernelsTest, AddMatchesTheCpu) {
  constexpr int64_t kCount = 3000;
  std::vector<float> x = AnyFloats(kCount), y = AnyFloats(kCount);
  std::shuffle(y.begin(), y.end(), random_);
  std::vector<float> expected = x, actual = x;
  cpu_.Add(F32(expected, 1, kCount), F32(y, 1, kCount));
  ASSERT_TRUE(emulation::EmulateAdd(actual.data(), y.data(), kCount).ok());
  // NaN + anything: any NaN, as IEEE leaves the payload open.
  ExpectSameFloats(actual, expected, true, Trace());
}

TEST_F(CudaElementwiseKernelsTest, AddBiasAddsAsLinearDoes) {
  constexpr int64_t kRows = 7;
  for (int64_t cols : {int64_t{20}, int64_t{300}}) {
    std::vector<float> out = Random(static_cast<size_t>(kRows * cols), 10.0f);
    const std::vector<float> bias = Random(static_cast<size_t>(cols));
    std::vector<float> expected = out;
    for (int64_t r = 0; r < kRows; ++r) {
      for (int64_t c = 0; c < cols; ++c) expected[r * cols + c] += bias[c];
    }
    ASSERT_TRUE(emulation::EmulateAddBias(out.data(), bias.data(), kRows, cols).ok());
    ExpectSameFloats(out, expected, false, Trace());
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
