// The work a prompt token costs matches the bundled model's own weights, and the vector peak
// measures exactly the product instructions this CPU has.
#include "bench/compute_peak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/throughput.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "tests/unit/engine/reference_model.h"

namespace kvd::bench {
namespace {

TEST(PromptTokenFlopsTest, CountsEveryProjectionAttentionAndTheHeadOnce) {
  auto backend = kernels::CreateBackend("cpu", {.num_threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto model = engine::Model::Load(engine::testing::BundledModelDir(), **backend);
  ASSERT_TRUE(model.ok()) << model.status();
  const engine::ModelConfig& config = (*model)->config();
  const engine::ModelWeights& weights = (*model)->weights();
  for (const int32_t prompt : {1, 7, 128}) {
    // Multiply-adds of the whole prompt, counted token by token from the weights' shapes.
    double multiply_adds = 0.0;
    for (int32_t token = 0; token < prompt; ++token) {
      for (const engine::LayerWeights& layer : weights.layers) {
        for (const kernels::PreparedWeight* weight :
             {&layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.o_proj, &layer.gate_proj,
              &layer.up_proj, &layer.down_proj}) {
          multiply_adds += static_cast<double>(weight->tensor.rows) * weight->tensor.cols;
        }
        // Every query head's dot products with keys 0..token, and its sum of as many values.
        multiply_adds += 2.0 * config.num_heads * config.head_dim * (token + 1);
      }
    }
    multiply_adds += static_cast<double>(weights.lm_head().rows) * weights.lm_head().cols;
    EXPECT_NEAR(PromptTokenFlops(config, prompt), 2 * multiply_adds / prompt, 1e-6 * multiply_adds)
        << prompt;
  }
}

TEST(ComputePeakTest, MeasuresEveryProductInstructionTheCpuHasOnEveryThread) {
  const kernels::cpu::CpuFeatures& features = kernels::cpu::HostCpuFeatures();
  std::vector<std::string> expected;
  if (features.avx2 || features.avx512) expected.push_back("f32 fma");
  if (features.avx512 && features.avx512_bf16) expected.push_back("bf16 dot");
  if (features.avx512 && features.avx512_vnni) expected.push_back("int8 dot");
  const ComputePeaks measured = MeasureComputePeaks(2);
  EXPECT_EQ(measured.threads, 2);
  std::vector<std::string> instructions;
  for (const ComputePeak& peak : measured.peaks) {
    instructions.push_back(peak.instruction);
    EXPECT_TRUE(std::isfinite(peak.gops_all_threads) && peak.gops_all_threads > 0)
        << peak.instruction;
    EXPECT_TRUE(std::isfinite(peak.gops_one_thread) && peak.gops_one_thread > 0)
        << peak.instruction;
  }
  EXPECT_EQ(instructions, expected);
}

TEST(ComputePeakTest, TheNoteNamesTheThreadsAndEachRate) {
  const ComputePeaks two{
      .threads = 2,
      .peaks = {{"f32 fma", 400.0, 200.0, "GFLOP/s"}, {"int8 dot", 1600.0, 800.0, "GOP/s"}}};
  EXPECT_EQ(ComputePeakNote(two),
            "vector peak on 2 threads at once (one thread alone): f32 fma 400.0 (200.0) GFLOP/s, "
            "int8 dot 1600.0 (800.0) GOP/s");
  const ComputePeaks one{.threads = 1, .peaks = {{"f32 fma", 200.0, 200.0, "GFLOP/s"}}};
  EXPECT_EQ(ComputePeakNote(one), "vector peak on one thread: f32 fma 200.0 GFLOP/s");
  EXPECT_EQ(ComputePeakNote({.threads = 2}), "vector peak not measured (no AVX2)");
}

}  // namespace
}  // namespace kvd::bench
