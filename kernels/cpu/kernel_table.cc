#include "kernels/cpu/kernel_table.h"

#include <utility>

namespace kvd::kernels::cpu {
namespace {

KernelVariant<MatmulVariant> Matmul(IsaSet needs, const MatmulVariant& variant) {
  return {variant.name, needs, variant};
}

void RunScalarRowByRow(const AttentionRows& a) { RunRowByRow(a, ScalarAttentionRow()); }

KernelTable MakeTable() {
  KernelTable t;
  t.matmul.variants = {Matmul(kAmxBf16Isas, AmxBf16Matmul()),
                       Matmul(kAvx512Bf16Isas, Avx512Bf16Matmul()),
                       Matmul(kAvx512Isas, Avx512Matmul()), Matmul(kAvx2Isas, Avx2Matmul()),
                       Matmul(0, ScalarMatmul())};
  t.attention_row.variants = {{"avx512", kAvx512Isas, Avx512AttentionRow()},
                              {"avx2", kAvx2Isas, Avx2AttentionRow()},
                              {"scalar", 0, ScalarAttentionRow()}};
  t.attention_rows.variants = {{"amx_bf16", kAmxBf16Isas, AmxBf16AttentionRows()},
                               {"avx512", kAvx512Isas, Avx512AttentionRows()},
                               {"scalar", 0, RunScalarRowByRow}};
  t.exp_sum.variants = {{"avx2", kAvx2Isas, Avx2ExpSum()}, {"scalar", 0, ScalarExpSum()}};
  t.first_above.variants = {{"avx2", kAvx2Isas, Avx2FirstAbove()},
                            {"scalar", 0, ScalarFirstAbove()}};
  t.rms_norm.variants = {{"avx2", kAvx2Isas, Avx2RmsNorm()}, {"scalar", 0, ScalarRmsNorm()}};
  t.silu_mul.variants = {{"avx2", kAvx2Isas, Avx2SiluMul()}, {"scalar", 0, ScalarSiluMul()}};
  t.row_dots.variants = {{"avx512", kAvx512Isas, Avx512RowDots()},
                         {"avx2", kAvx2Isas, Avx2RowDots()},
                         {"scalar", 0, ScalarRowDots()}};
  t.score_fold.variants = {{"avx2", kAvx2Isas, Avx2ScoreFold()}, {"scalar", 0, ScalarScoreFold()}};
  return t;
}

}  // namespace

const KernelTable& AllKernels() {
  static const KernelTable table = MakeTable();
  return table;
}

HostKernelChoice ChooseKernels(IsaSet isas) {
  const KernelTable& all = AllKernels();
  HostKernelChoice choice{.matmul = all.matmul.Fastest(isas),
                          .attention_row = all.attention_row.Fastest(isas),
                          .exp_sum = all.exp_sum.Fastest(isas),
                          .first_above = all.first_above.Fastest(isas),
                          .rms_norm = all.rms_norm.Fastest(isas),
                          .silu_mul = all.silu_mul.Fastest(isas),
                          .row_dots = all.row_dots.Fastest(isas),
                          .score_fold = all.score_fold.Fastest(isas)};
  const KernelVariant<AttentionRowsKernel> rows = all.attention_rows.Fastest(isas);
  if (rows.needs != 0) {
    choice.attention_rows = rows.kernel;
    choice.attention_rows_name = rows.name;
  } else {
    choice.attention_rows_name = "by row";
  }
  return choice;
}

const HostKernelChoice& HostKernels() {
  static const HostKernelChoice choice = ChooseKernels(HostCpuFeatures().isas());
  return choice;
}

std::string HostKernelChoice::Describe(std::string_view matmul_note) const {
  std::string out = "matmul ";
  out.append(matmul.name).append(matmul_note);
  for (const auto& [op, name] : {std::pair{"attention", attention_row.name},
                                 {"attention rows", attention_rows_name},
                                 {"exp sum", exp_sum.name},
                                 {"first above", first_above.name},
                                 {"rms norm", rms_norm.name},
                                 {"silu mul", silu_mul.name},
                                 {"row dots", row_dots.name},
                                 {"score fold", score_fold.name}}) {
    out.append("; ").append(op).append(" ").append(name);
  }
  return out;
}

}  // namespace kvd::kernels::cpu
