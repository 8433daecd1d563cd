// The CPU kernel table: every op ends with a scalar reference that needs no instruction set,
// names are unique within an op, a variant runs only where every set it needs does, the choice
// for a CPU is each op's first runnable variant (the scalar ones with nothing, the vector ones
// with everything), and the host's choice is the one for this CPU's sets and is what `kvd info`
// describes.
#include "kernels/cpu/kernel_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <type_traits>

namespace kvd::kernels::cpu {
namespace {

constexpr IsaSet kEverySet = kAmxBf16Isas;

template <class Kernel>
void ExpectWellFormed(const OpKernels<Kernel>& op, std::string_view label) {
  SCOPED_TRACE(std::string(label));
  ASSERT_FALSE(op.variants.empty());
  EXPECT_EQ(op.Reference().name, "scalar");
  EXPECT_EQ(op.Reference().needs, IsaSet{0});
  std::set<std::string_view> names;
  for (const KernelVariant<Kernel>& v : op.variants) {
    EXPECT_TRUE(names.insert(v.name).second) << "two variants named " << v.name;
    if constexpr (std::is_same_v<Kernel, MatmulVariant>) {
      EXPECT_NE(v.kernel.run, nullptr) << v.name;
    } else {
      EXPECT_NE(v.kernel, nullptr) << v.name;
    }
    EXPECT_EQ(v.needs & ~kEverySet, IsaSet{0}) << v.name << " needs an unknown set";
  }
  // Nothing but the reference runs on a CPU without vector sets; everything on one with all.
  ASSERT_EQ(op.Runnable(0).size(), 1u);
  EXPECT_EQ(op.Runnable(0).front().name, "scalar");
  EXPECT_EQ(op.Runnable(kEverySet).size(), op.variants.size());
  // A variant runs exactly where its sets do: AVX2 alone runs no AVX-512 or AMX variant.
  for (const KernelVariant<Kernel>& v : op.Runnable(kAvx2Isas)) {
    EXPECT_EQ(v.needs & ~kAvx2Isas, IsaSet{0}) << v.name;
  }
  // Fastest first: each variant needs strictly less than the one before it, so the first one a
  // CPU runs is the one compiled for the most of its sets.
  for (size_t i = 0; i + 1 < op.variants.size(); ++i) {
    EXPECT_NE(op.variants[i].needs, op.variants[i + 1].needs)
        << op.variants[i].name << " and " << op.variants[i + 1].name << " need the same sets";
    EXPECT_EQ(op.variants[i + 1].needs & ~op.variants[i].needs, IsaSet{0})
        << op.variants[i + 1].name << " needs a set " << op.variants[i].name << " does not";
  }
}

TEST(KernelTableTest, EveryOpEndsWithItsScalarReferenceAndNeedsNestFastestFirst) {
  const KernelTable& all = AllKernels();
  ExpectWellFormed(all.matmul, "matmul");
  ExpectWellFormed(all.attention_row, "attention_row");
  ExpectWellFormed(all.attention_rows, "attention_rows");
  ExpectWellFormed(all.exp_sum, "exp_sum");
  ExpectWellFormed(all.first_above, "first_above");
  ExpectWellFormed(all.rms_norm, "rms_norm");
  ExpectWellFormed(all.silu_mul, "silu_mul");
  ExpectWellFormed(all.row_dots, "row_dots");
  ExpectWellFormed(all.score_fold, "score_fold");
  for (const KernelVariant<MatmulVariant>& v : all.matmul.variants) {
    EXPECT_EQ(v.name, v.kernel.name);
  }
}

TEST(KernelTableTest, ACpuWithoutVectorSetsRunsTheReferencesAndPromptRowsOneAtATime) {
  const HostKernelChoice choice = ChooseKernels(0);
  EXPECT_EQ(choice.matmul.name, "scalar");
  EXPECT_EQ(choice.attention_row.name, "scalar");
  EXPECT_EQ(choice.attention_rows, nullptr);
  EXPECT_EQ(choice.attention_rows_name, "by row");
  EXPECT_EQ(choice.rms_norm.kernel, ScalarRmsNorm());
  EXPECT_EQ(choice.Describe(),
            "matmul scalar; attention scalar; attention rows by row; exp sum scalar; first above "
            "scalar; rms norm scalar; silu mul scalar; row dots scalar; score fold scalar");
}

TEST(KernelTableTest, EachSetChoosesTheFastestVariantItRuns) {
  const HostKernelChoice avx2 = ChooseKernels(kAvx2Isas);
  EXPECT_EQ(avx2.matmul.name, "avx2");
  EXPECT_EQ(avx2.attention_row.name, "avx2");
  EXPECT_EQ(avx2.attention_rows, nullptr);
  EXPECT_EQ(avx2.row_dots.name, "avx2");
  EXPECT_EQ(avx2.exp_sum.name, "avx2");
  // AVX-512 without VNNI runs no kernel compiled for KVD_AVX512 (isa_targets.h).
  const HostKernelChoice no_vnni = ChooseKernels(kIsaAvx2 | kIsaAvx512);
  EXPECT_EQ(no_vnni.matmul.name, "avx2");
  EXPECT_EQ(no_vnni.row_dots.name, "avx2");
  const HostKernelChoice avx512 = ChooseKernels(kAvx512Isas);
  EXPECT_EQ(avx512.matmul.name, "avx512");
  EXPECT_EQ(avx512.attention_rows_name, "avx512");
  EXPECT_NE(avx512.attention_rows, nullptr);
  EXPECT_EQ(ChooseKernels(kAvx512Bf16Isas).matmul.name, "avx512_bf16");
  EXPECT_EQ(ChooseKernels(kAmxBf16Isas).matmul.name, "amx_bf16");
  EXPECT_EQ(ChooseKernels(kAmxBf16Isas).attention_rows_name, "amx_bf16");
}

TEST(KernelTableTest, TheHostRunsTheChoiceForItsOwnSets) {
  const HostKernelChoice& host = HostKernels();
  const HostKernelChoice expected = ChooseKernels(HostCpuFeatures().isas());
  EXPECT_EQ(host.Describe(), expected.Describe());
  EXPECT_EQ(host.matmul.kernel.run, expected.matmul.kernel.run);
  EXPECT_EQ(host.attention_row.kernel, expected.attention_row.kernel);
  EXPECT_EQ(host.attention_rows, expected.attention_rows);
  EXPECT_EQ(&host, &HostKernels());  // chosen once
}

}  // namespace
}  // namespace kvd::kernels::cpu
