// Every CPU op's kernels in one table: for each op, its variants fastest first, each with the
// instruction sets it is compiled for (isa_targets.h), and the scalar reference last, which
// needs none. What this CPU runs is chosen from it once (HostKernels) and `kvd info` prints the
// choice. Each op's test in tests/unit/kernels/ walks the variants this CPU runs from this table
// and holds each to the op's reference; kernel_table_test.cc checks the table and the choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/exp_sum.h"
#include "kernels/cpu/first_above.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/row_dots.h"
#include "kernels/cpu/score_fold.h"
#include "kernels/cpu/silu_mul.h"

namespace kvd::kernels::cpu {

template <class Kernel>
struct KernelVariant {
  std::string_view name;
  IsaSet needs = 0;
  Kernel kernel;
};

// One op's variants, the fastest first and the scalar reference (needs 0) last.
template <class Kernel>
struct OpKernels {
  std::vector<KernelVariant<Kernel>> variants;

  // Those a CPU with `isas` runs, fastest first: the reference at least.
  std::vector<KernelVariant<Kernel>> Runnable(IsaSet isas) const {
    std::vector<KernelVariant<Kernel>> runnable;
    for (const KernelVariant<Kernel>& v : variants) {
      if ((v.needs & isas) == v.needs) runnable.push_back(v);
    }
    return runnable;
  }
  // Those this CPU runs.
  std::vector<KernelVariant<Kernel>> RunnableHere() const {
    return Runnable(HostCpuFeatures().isas());
  }
  KernelVariant<Kernel> Fastest(IsaSet isas) const { return Runnable(isas).front(); }
  const KernelVariant<Kernel>& Reference() const { return variants.back(); }
};

struct KernelTable {
  OpKernels<MatmulVariant> matmul;
  OpKernels<AttentionRowKernel> attention_row;
  // A prompt's rows at once; the reference runs the scalar row kernel row by row.
  OpKernels<AttentionRowsKernel> attention_rows;
  OpKernels<ExpSumKernel> exp_sum;
  OpKernels<FirstAboveKernel> first_above;
  OpKernels<RmsNormKernel> rms_norm;
  OpKernels<SiluMulKernel> silu_mul;
  OpKernels<RowDotsKernel> row_dots;
  OpKernels<ScoreFoldKernel> score_fold;
};

// Every variant compiled into this binary.
const KernelTable& AllKernels();

// The kernels this process runs: each op's fastest variant for this CPU, chosen once.
struct HostKernelChoice {
  KernelVariant<MatmulVariant> matmul;
  KernelVariant<AttentionRowKernel> attention_row;
  // Null where only the reference runs here: a prompt's rows then go one at a time to
  // attention_row, which is faster than the reference's scalar rows.
  AttentionRowsKernel attention_rows = nullptr;
  std::string_view attention_rows_name;
  KernelVariant<ExpSumKernel> exp_sum;
  KernelVariant<FirstAboveKernel> first_above;
  KernelVariant<RmsNormKernel> rms_norm;
  KernelVariant<SiluMulKernel> silu_mul;
  KernelVariant<RowDotsKernel> row_dots;
  KernelVariant<ScoreFoldKernel> score_fold;

  // "matmul amx_bf16; attention avx512; attention rows avx512; exp sum avx2; …", with
  // `matmul_note` after the matmul's name.
  std::string Describe(std::string_view matmul_note = "") const;
};

// The choice for a CPU running `isas`.
HostKernelChoice ChooseKernels(IsaSet isas);
// The choice for this CPU, made on the first call.
const HostKernelChoice& HostKernels();

}  // namespace kvd::kernels::cpu
