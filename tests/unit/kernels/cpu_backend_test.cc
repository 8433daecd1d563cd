// Each CPU backend op against a direct formula on random inputs.
#include "kernels/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"

namespace kvd::kernels::cpu {
namespace {

std::vector<float> RandomVector(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(size);
  for (float& x : out) x = normal(random);
  return out;
}

Tensor View(std::vector<float>& data, int64_t rows, int64_t cols) {
  return Tensor{data.data(), DType::kF32, rows, cols};
}

class CpuBackendTest : public ::testing::Test {
 protected:
  CpuBackend backend_{BackendOptions{.num_threads = 2}};
};

TEST_F(CpuBackendTest, RmsNormScalesEachRow) {
  auto x = RandomVector(3 * 64, 1);
  auto weight = RandomVector(64, 2);
  std::vector<float> out(x.size());
  backend_.RmsNorm(View(x, 3, 64), View(weight, 1, 64), 1e-5f, View(out, 3, 64));
  for (int row = 0; row < 3; ++row) {
    double squares = 0.0;
    for (int i = 0; i < 64; ++i) squares += double{x[row * 64 + i]} * x[row * 64 + i];
    const double inv_rms = 1.0 / std::sqrt(squares / 64 + 1e-5);
    for (int i = 0; i < 64; ++i) {
      EXPECT_NEAR(out[row * 64 + i], x[row * 64 + i] * inv_rms * weight[i], 1e-5);
    }
  }
}

TEST_F(CpuBackendTest, LinearMultipliesByTransposedWeightAndAddsBias) {
  for (int rows : {1, 5}) {
    auto x = RandomVector(rows * 24, 3);
    auto weight = RandomVector(10 * 24, 4);
    auto bias = RandomVector(10, 5);
    std::vector<float> out(rows * 10);
    const Tensor bias_view = View(bias, 1, 10);
    backend_.Linear(View(x, rows, 24), View(weight, 10, 24), &bias_view, View(out, rows, 10));
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < 10; ++o) {
        double expected = bias[o];
        for (int i = 0; i < 24; ++i) expected += double{x[r * 24 + i]} * weight[o * 24 + i];
        EXPECT_NEAR(out[r * 10 + o], expected, 1e-4) << "rows " << rows;
      }
    }
  }
}

// A group's products are the same as each Linear alone, bit for bit: grouping changes which
// thread computes which slice, never an output's sum. Shapes of q, k and v (one wide product and
// two narrow ones) over rows that reach the kernels' one-row, few-row and many-row paths, large
// enough to be split over the pool, in every weight format.
TEST_F(CpuBackendTest, LinearGroupEqualsEachLinearAlone) {
  constexpr int64_t kIn = 256;
  const int64_t widths[] = {520, 136, 136};
  for (DType format : {DType::kF32, DType::kBF16, DType::kInt8, DType::kInt4}) {
    CpuBackend backend{BackendOptions{.num_threads = 2, .weight_dtype = format}};
    std::vector<std::vector<float>> hosts;
    std::vector<PreparedWeight> weights;
    std::vector<std::vector<float>> biases;
    for (int64_t w = 0; w < 3; ++w) {
      hosts.push_back(RandomVector(widths[w] * kIn, 20 + w));
      auto prepared = backend.PrepareWeight(View(hosts.back(), widths[w], kIn));
      ASSERT_TRUE(prepared.ok()) << prepared.status();
      weights.push_back(*std::move(prepared));
      biases.push_back(RandomVector(widths[w], 30 + w));
    }
    for (int64_t rows : {1, 3, 40}) {
      std::vector<float> x = RandomVector(rows * kIn, 40);
      std::vector<std::vector<float>> grouped(3), alone(3);
      std::vector<Projection> projections;
      std::vector<Tensor> bias_views;
      for (int64_t w = 0; w < 3; ++w) bias_views.push_back(View(biases[w], 1, widths[w]));
      for (int64_t w = 0; w < 3; ++w) {
        grouped[w].assign(rows * widths[w], 0.0f);
        alone[w].assign(rows * widths[w], 0.0f);
        // The middle product has no bias, as a group may mix them.
        projections.push_back(Projection{&weights[w].tensor, w == 1 ? nullptr : &bias_views[w],
                                         View(grouped[w], rows, widths[w])});
        backend.Linear(View(x, rows, kIn), weights[w].tensor, projections.back().bias,
                       View(alone[w], rows, widths[w]));
      }
      backend.LinearGroup(View(x, rows, kIn), projections);
      // f32 products of many rows run on OpenBLAS where this CPU has no GEMM of ours, and
      // OpenBLAS's sums change in their last bits with how wide a slice it is handed: a group is
      // cut by its widest product. Everywhere else the sums are the same bits.
      const bool on_openblas =
          format == DType::kF32 && rows > 16 && !HostKernels().matmul.kernel.f32_gemm;
      for (int64_t w = 0; w < 3; ++w) {
        if (!on_openblas) {
          EXPECT_EQ(grouped[w], alone[w])
              << DTypeName(format) << " rows " << rows << " product " << w;
          continue;
        }
        for (size_t i = 0; i < alone[w].size(); ++i) {
          EXPECT_NEAR(grouped[w][i], alone[w][i], 1e-5f * (1.0f + std::fabs(alone[w][i])))
              << "rows " << rows << " product " << w << " element " << i;
        }
      }
    }
  }
}

// GatedLinear is silu(gate) · up of the two products, the same as Linear, Linear and SiluMul.
TEST_F(CpuBackendTest, GatedLinearEqualsTwoLinearsAndSiluMul) {
  constexpr int64_t kIn = 128, kInner = 344;
  for (DType format : {DType::kF32, DType::kBF16, DType::kInt8}) {
    CpuBackend backend{BackendOptions{.num_threads = 2, .weight_dtype = format}};
    std::vector<float> gate_host = RandomVector(kInner * kIn, 50);
    std::vector<float> up_host = RandomVector(kInner * kIn, 51);
    auto gate = backend.PrepareWeight(View(gate_host, kInner, kIn));
    auto up = backend.PrepareWeight(View(up_host, kInner, kIn));
    ASSERT_TRUE(gate.ok() && up.ok());
    for (int64_t rows : {1, 5, 48}) {
      std::vector<float> x = RandomVector(rows * kIn, 52);
      std::vector<float> fused(rows * kInner), scratch(rows * kInner);
      std::vector<float> gated(rows * kInner), ups(rows * kInner);
      backend.GatedLinear(View(x, rows, kIn), gate->tensor, up->tensor, View(scratch, rows, kInner),
                          View(fused, rows, kInner));
      backend.Linear(View(x, rows, kIn), gate->tensor, nullptr, View(gated, rows, kInner));
      backend.Linear(View(x, rows, kIn), up->tensor, nullptr, View(ups, rows, kInner));
      backend.SiluMul(View(gated, rows, kInner), View(ups, rows, kInner),
                      View(gated, rows, kInner));
      EXPECT_EQ(fused, gated) << DTypeName(format) << " rows " << rows;
    }
  }
}

TEST_F(CpuBackendTest, RopeRotatesHalvesByPosition) {
  constexpr int kHeads = 2, kHeadDim = 8;
  // The backend keeps the last call's angles: calls with the same positions and frequencies
  // reuse them, and any change (one position, the row count, a frequency) recomputes them.
  const auto expect_rotated = [&](const std::vector<int32_t>& positions,
                                  const std::vector<float>& inv_freq, uint32_t seed) {
    const int rows = static_cast<int>(positions.size());
    auto x = RandomVector(rows * kHeads * kHeadDim, seed);
    const auto original = x;
    backend_.ApplyRope(View(x, rows, kHeads * kHeadDim), kHeads, positions, inv_freq);
    for (int row = 0; row < rows; ++row) {
      for (int head = 0; head < kHeads; ++head) {
        const float* in = original.data() + (row * kHeads + head) * kHeadDim;
        const float* out = x.data() + (row * kHeads + head) * kHeadDim;
        for (int i = 0; i < kHeadDim / 2; ++i) {
          const double angle = double{static_cast<float>(positions[row]) * inv_freq[i]};
          EXPECT_NEAR(out[i], in[i] * std::cos(angle) - in[i + 4] * std::sin(angle), 1e-5)
              << "position " << positions[row];
          EXPECT_NEAR(out[i + 4], in[i + 4] * std::cos(angle) + in[i] * std::sin(angle), 1e-5)
              << "position " << positions[row];
        }
      }
    }
  };
  const std::vector<float> inv_freq = {1.0f, 0.1f, 0.01f, 0.001f};
  expect_rotated({0, 7, 1000}, inv_freq, 6);
  expect_rotated({0, 7, 1000}, inv_freq, 7);
  expect_rotated({0, 7, 1001}, inv_freq, 8);
  expect_rotated({5}, inv_freq, 9);
  expect_rotated({5}, {1.0f, 0.5f, 0.25f, 0.125f}, 10);
  expect_rotated({0, 7, 1000}, inv_freq, 11);
}

TEST_F(CpuBackendTest, SiluMulAndAdd) {
  auto gate = RandomVector(40000, 7);
  auto up = RandomVector(40000, 8);
  std::vector<float> out(gate.size());
  backend_.SiluMul(View(gate, 1, 40000), View(up, 1, 40000), View(out, 1, 40000));
  for (size_t i = 0; i < gate.size(); i += 997) {
    EXPECT_NEAR(out[i], gate[i] / (1.0 + std::exp(-double{gate[i]})) * up[i], 1e-5);
  }
  auto sum = gate;
  backend_.Add(View(sum, 1, 40000), View(up, 1, 40000));
  for (size_t i = 0; i < gate.size(); i += 997) EXPECT_FLOAT_EQ(sum[i], gate[i] + up[i]);
}

TEST_F(CpuBackendTest, GatherRowsCopiesIndexedRows) {
  auto table = RandomVector(5 * 3, 9);
  std::vector<float> out(2 * 3);
  const std::vector<int32_t> indices = {4, 1};
  backend_.GatherRows(View(table, 5, 3), indices, View(out, 2, 3));
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(out[c], table[4 * 3 + c]);
    EXPECT_EQ(out[3 + c], table[1 * 3 + c]);
  }
}

TEST_F(CpuBackendTest, PrepareWeightConvertsHalfPrecisionToF32) {
  const std::vector<float> values = {1.0f, -2.5f, 0.15625f, 65504.0f};
  std::vector<uint16_t> bf16, f16;
  for (float v : values) {
    bf16.push_back(FloatToBF16(v));
    f16.push_back(FloatToF16(v));
  }
  auto from_bf16 = backend_.PrepareWeight(Tensor{bf16.data(), DType::kBF16, 1, 4});
  auto from_f16 = backend_.PrepareWeight(Tensor{f16.data(), DType::kF16, 1, 4});
  ASSERT_TRUE(from_bf16.ok() && from_f16.ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(from_bf16->tensor.f32()[i], BF16ToFloat(bf16[i]));
    EXPECT_EQ(from_f16->tensor.f32()[i], values[i]);  // all exactly representable in f16
  }
  std::vector<float> f32 = values;
  // f32 stays f32, in the backend's own memory: the checkpoint may be closed after loading.
  auto copied = backend_.PrepareWeight(View(f32, 1, 4));
  ASSERT_TRUE(copied.ok());
  ASSERT_NE(copied->storage, nullptr);
  EXPECT_EQ(copied->tensor.data, copied->storage->data());
  EXPECT_EQ(std::memcmp(copied->tensor.data, f32.data(), f32.size() * sizeof(float)), 0);
}

TEST_F(CpuBackendTest, MatricesKeepTheirTypeOrTheConfiguredOne) {
  std::vector<float> f32 = RandomVector(8 * 16, 9);
  std::vector<uint16_t> bf16;
  for (float v : f32) bf16.push_back(FloatToBF16(v));
  // By default a matrix keeps the checkpoint's type: bf16 is copied bit for bit.
  auto kept = backend_.PrepareWeight(Tensor{bf16.data(), DType::kBF16, 8, 16});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->tensor.dtype, DType::kBF16);
  ASSERT_NE(kept->tensor.data, bf16.data());
  EXPECT_EQ(std::memcmp(kept->tensor.data, bf16.data(), bf16.size() * sizeof(uint16_t)), 0);
  // Configured bf16: an f32 matrix is rounded to it; a vector stays f32.
  CpuBackend to_bf16{BackendOptions{.num_threads = 2, .weight_dtype = DType::kBF16}};
  auto rounded = to_bf16.PrepareWeight(View(f32, 8, 16));
  ASSERT_TRUE(rounded.ok());
  ASSERT_EQ(rounded->tensor.dtype, DType::kBF16);
  const auto* bits = static_cast<const uint16_t*>(rounded->tensor.data);
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_EQ(bits[i], bf16[i]);
  auto vector = to_bf16.PrepareWeight(View(f32, 1, 16));
  ASSERT_TRUE(vector.ok());
  EXPECT_EQ(vector->tensor.dtype, DType::kF32);
  // Configured f32: a bf16 matrix is widened.
  CpuBackend to_f32{BackendOptions{.num_threads = 2, .weight_dtype = DType::kF32}};
  auto widened = to_f32.PrepareWeight(Tensor{bf16.data(), DType::kBF16, 8, 16});
  ASSERT_TRUE(widened.ok());
  ASSERT_EQ(widened->tensor.dtype, DType::kF32);
  for (size_t i = 0; i < bf16.size(); ++i) {
    EXPECT_EQ(widened->tensor.f32()[i], BF16ToFloat(bf16[i]));
  }
  // A type asked for one weight (a model loaded in a dtype of its own) wins over both.
  auto asked = to_f32.PrepareWeight(Tensor{bf16.data(), DType::kBF16, 8, 16}, DType::kBF16);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->tensor.dtype, DType::kBF16);
  auto asked_vector = to_f32.PrepareWeight(View(f32, 1, 16), DType::kBF16);
  ASSERT_TRUE(asked_vector.ok());
  EXPECT_EQ(asked_vector->tensor.dtype, DType::kF32);
}

TEST_F(CpuBackendTest, HalfWeightsProjectAndGatherAsTheirF32Values) {
  const int64_t vocab = 40, width = 72;
  std::vector<float> table = RandomVector(vocab * width, 10);
  CpuBackend to_bf16{BackendOptions{.num_threads = 2, .weight_dtype = DType::kBF16}};
  CpuBackend to_f16{BackendOptions{.num_threads = 2, .weight_dtype = DType::kF16}};
  for (CpuBackend* half : {&to_bf16, &to_f16}) {
    auto prepared = half->PrepareWeight(View(table, vocab, width));
    ASSERT_TRUE(prepared.ok());
    ASSERT_NE(prepared->tensor.dtype, DType::kF32);
    // The f32 values the half weights stand for.
    std::vector<float> exact(table.size());
    const auto* bits = static_cast<const uint16_t*>(prepared->tensor.data);
    for (size_t i = 0; i < exact.size(); ++i) {
      exact[i] =
          prepared->tensor.dtype == DType::kBF16 ? BF16ToFloat(bits[i]) : F16ToFloat(bits[i]);
    }
    const std::vector<int32_t> tokens = {3, 0, 39, 3};
    std::vector<float> gathered(tokens.size() * width);
    half->GatherRows(prepared->tensor, tokens, View(gathered, 4, width));
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int64_t j = 0; j < width; ++j) {
        EXPECT_EQ(gathered[t * width + j], exact[tokens[t] * width + j]);
      }
    }
    // The backend runs the fastest variant, which may round x to bf16 from some row count on
    // (matmul.h): the f32 product then takes the rounded x.
    const MatmulVariant variant = HostKernels().matmul.kernel;
    for (int64_t rows : {1, 3, 12}) {
      std::vector<float> x = RandomVector(rows * width, 11);
      std::vector<float> got(rows * vocab), want(rows * vocab);
      half->Linear(View(x, rows, width), prepared->tensor, nullptr, View(got, rows, vocab));
      if (RoundsRowsToBf16(variant, prepared->tensor.dtype, rows)) {
        for (float& v : x) v = BF16ToFloat(FloatToBF16(v));
      }
      backend_.Linear(View(x, rows, width), View(exact, vocab, width), nullptr,
                      View(want, rows, vocab));
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << rows;
    }
  }
}

TEST_F(CpuBackendTest, QuantizedWeightsProjectAndGatherAsTheirDequantizedValues) {
  const int64_t vocab = 40, width = 96;
  std::vector<float> table = RandomVector(vocab * width, 12);
  for (DType format : {DType::kInt8, DType::kInt4}) {
    CpuBackend quantizing{BackendOptions{.num_threads = 2, .weight_dtype = format}};
    auto prepared = quantizing.PrepareWeight(View(table, vocab, width));
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    ASSERT_EQ(prepared->tensor.dtype, format);
    EXPECT_EQ(prepared->tensor.num_bytes(), vocab * RowBytes(format, width));
    std::vector<float> dequantized(table.size());
    for (int64_t r = 0; r < vocab; ++r) {
      DequantizeRow(format, prepared->tensor.Rows(r, 1).data, width,
                    dequantized.data() + r * width);
    }
    const std::vector<int32_t> tokens = {3, 0, 39, 3};
    std::vector<float> gathered(tokens.size() * width);
    quantizing.GatherRows(prepared->tensor, tokens, View(gathered, 4, width));
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int64_t j = 0; j < width; ++j) {
        EXPECT_EQ(gathered[t * width + j], dequantized[tokens[t] * width + j]);
      }
    }
    // Against the f32 product of the dequantized weights: only the activations' int8 rounding
    // differs, an error of σ ≈ 0.0055 per input (half a step of max|x| / 127, uniform) and so
    // ≈ 0.054 over 96 inputs; 0.3 is 5.5 σ, where a misread block is off by the whole product
    // (≈ 10).
    for (int64_t rows : {1, 3, 20}) {
      std::vector<float> x = RandomVector(rows * width, 13);
      std::vector<float> got(rows * vocab), want(rows * vocab);
      quantizing.Linear(View(x, rows, width), prepared->tensor, nullptr, View(got, rows, vocab));
      backend_.Linear(View(x, rows, width), View(dequantized, vocab, width), nullptr,
                      View(want, rows, vocab));
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.3) << rows;
    }
    // A vector stays f32; a matrix whose rows are not whole blocks keeps the checkpoint's type.
    auto vector = quantizing.PrepareWeight(View(table, 1, width));
    ASSERT_TRUE(vector.ok());
    EXPECT_EQ(vector->tensor.dtype, DType::kF32);
    auto ragged = quantizing.PrepareWeight(View(table, 8, 40));
    ASSERT_TRUE(ragged.ok());
    EXPECT_EQ(ragged->tensor.dtype, DType::kF32);
    // A weight the format cannot hold is an error, not garbage.
    std::vector<float> broken = table;
    broken[5 * width + 7] = std::nanf("");
    auto refused = quantizing.PrepareWeight(View(broken, vocab, width));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().ToString().find(DTypeName(format)), std::string::npos)
        << refused.status();
  }
}

TEST(BackendFactoryTest, OnlyTheCpuTakesQuantizedWeights) {
  for (DType format : {DType::kInt8, DType::kInt4}) {
    auto cpu = CreateBackend("cpu", {.num_threads = 1, .weight_dtype = format});
    EXPECT_TRUE(cpu.ok()) << cpu.status();
    // Refused before any device is looked for, so in every build and on every machine.
    auto cuda = CreateBackend("cuda", {.num_threads = 1, .weight_dtype = format});
    ASSERT_FALSE(cuda.ok());
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(cuda.status().ToString().find(std::string(DTypeName(format)) + " weights"),
              std::string::npos)
        << cuda.status();
  }
}

// Writes random entries to three slots of a pool of head size 8, copies them to three others
// and reads the copies back: what was written, and what came back.
struct KvRoundTrip {
  std::vector<float> keys, values, votes;
  std::vector<float> read_keys, read_values, read_votes;
};
KvRoundTrip WriteCopyAndRead(Backend& backend, const KvPool& pool) {
  const std::vector<KvSlot> written = {13, 2, 7};
  const std::vector<KvSlot> copies = {0, 15, 9};
  KvRoundTrip r{RandomVector(written.size() * pool.head_dim, 13),
                RandomVector(written.size() * pool.head_dim, 14),
                {0.5f, -1.0f, 2.0f}};
  EXPECT_TRUE(
      backend.WriteKvSlots(pool, written, r.keys.data(), r.values.data(), r.votes.data()).ok());
  EXPECT_TRUE(backend.CopyKvSlots(pool, written, copies).ok());
  r.read_keys.resize(r.keys.size());
  r.read_values.resize(r.values.size());
  r.read_votes.resize(r.votes.size());
  EXPECT_TRUE(
      backend
          .ReadKvSlots(pool, copies, r.read_keys.data(), r.read_values.data(), r.read_votes.data())
          .ok());
  return r;
}

TEST_F(CpuBackendTest, KvSlotsWriteReadAndCopyWholeEntries) {
  constexpr int32_t kBlocks = 4, kBlockSize = 4, kHeadDim = 8;
  auto keys = RandomVector(kBlocks * kBlockSize * kHeadDim, 10);
  auto values = RandomVector(keys.size(), 11);
  auto votes = RandomVector(kBlocks * kBlockSize, 12);
  const KvPool pool{keys.data(), values.data(), votes.data(), kBlocks, kBlockSize, kHeadDim};
  const KvRoundTrip r = WriteCopyAndRead(backend_, pool);
  EXPECT_EQ(r.read_keys, r.keys);
  EXPECT_EQ(r.read_values, r.values);
  EXPECT_EQ(r.read_votes, r.votes);
  // Slots neither written nor copied to keep their contents.
  const auto original_keys = RandomVector(keys.size(), 10);
  for (KvSlot untouched : {1, 3, 14}) {
    for (int32_t d = 0; d < kHeadDim; ++d) {
      EXPECT_EQ(keys[untouched * kHeadDim + d], original_keys[untouched * kHeadDim + d]);
    }
  }
}

// A bf16 pool: every way in rounds each key and value to the nearest bf16 (ties to even), every
// way out returns those numbers as f32, and copies move the bits; log-votes stay f32.
TEST_F(CpuBackendTest, Bf16KvPoolRoundsOnTheWayInAndCopiesExactly) {
  constexpr int32_t kBlocks = 4, kBlockSize = 4, kHeadDim = 8, kKvHeads = 2;
  EXPECT_TRUE(backend_.CheckKvCacheType(DType::kBF16).ok());
  EXPECT_EQ(backend_.CheckKvCacheType(DType::kF16).code(), absl::StatusCode::kInvalidArgument);
  std::vector<uint16_t> keys(kBlocks * kBlockSize * kHeadDim), values(keys.size());
  std::vector<float> votes(kBlocks * kBlockSize, -7.0f);
  const KvPool pool{keys.data(), values.data(), votes.data(), kBlocks,
                    kBlockSize,  kHeadDim,      DType::kBF16};
  const auto rounded = [](std::vector<float> x) {
    for (float& v : x) v = BF16ToFloat(FloatToBF16(v));
    return x;
  };

  const KvRoundTrip r = WriteCopyAndRead(backend_, pool);
  EXPECT_EQ(r.read_keys, rounded(r.keys));
  EXPECT_EQ(r.read_values, rounded(r.values));
  EXPECT_EQ(r.read_votes, r.votes);
  EXPECT_NE(r.read_keys, r.keys);  // random normals are not all bf16 numbers

  // AppendKv: one sequence, two rows after one cached entry, each kv head in its own block.
  auto k = RandomVector(2 * kKvHeads * kHeadDim, 15);
  auto v = RandomVector(k.size(), 16);
  const int32_t block_of_head[kKvHeads] = {1, 3};
  const int32_t* tables[kKvHeads] = {&block_of_head[0], &block_of_head[1]};
  const int32_t cached[kKvHeads] = {1, 1};
  const SequenceKvRef sequence{0, 2, tables, cached};
  backend_.AppendKv(View(k, 2, kKvHeads * kHeadDim), View(v, 2, kKvHeads * kHeadDim), pool,
                    {&sequence, 1});
  const auto rounded_k = rounded(k), rounded_v = rounded(v);
  for (int32_t h = 0; h < kKvHeads; ++h) {
    for (int32_t row = 0; row < 2; ++row) {
      const KvSlot slot = KvSlot{block_of_head[h]} * kBlockSize + 1 + row;
      std::vector<float> key(kHeadDim), value(kHeadDim);
      float vote = -1.0f;
      EXPECT_TRUE(backend_.ReadKvSlots(pool, {&slot, 1}, key.data(), value.data(), &vote).ok());
      const int64_t first = (int64_t{row} * kKvHeads + h) * kHeadDim;
      EXPECT_EQ(
          key, std::vector<float>(rounded_k.begin() + first, rounded_k.begin() + first + kHeadDim));
      EXPECT_EQ(value, std::vector<float>(rounded_v.begin() + first,
                                          rounded_v.begin() + first + kHeadDim));
      EXPECT_EQ(vote, 0.0f);
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
