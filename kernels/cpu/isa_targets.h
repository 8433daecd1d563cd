// The instruction sets the vector kernels compile for: one target attribute each, named beside
// the IsaSet (cpu_features.h) a CPU must have to run a function compiled under it, which is what
// the kernel table (kernel_table.h) lists as each variant's needs. Every vector kernel's
// functions carry one of these and no other target, so that "AVX-512" means one set of
// instructions in every kernel. Include only from files whose functions carry them: the rest of
// the binary stays baseline x86-64.
#pragma once

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/intrinsics.h"

// kAvx2Isas: AVX2 with FMA and F16C.
#define KVD_AVX2 __attribute__((target("avx2,fma,f16c")))
// kAvx512Isas: AVX-512 F, BW, DQ, VL and VNNI, with FMA and F16C.
#define KVD_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")))
// kAvx512Bf16Isas: KVD_AVX512 and AVX512-BF16's conversions and dot products of bf16 pairs.
#define KVD_AVX512_BF16                                                  \
  __attribute__((                                                        \
      target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16," \
             "avx2,fma,f16c")))
// kAmxBf16Isas: KVD_AVX512_BF16 and AMX tiles with BF16.
#define KVD_AMX_BF16                                                     \
  __attribute__((                                                        \
      target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16," \
             "avx2,fma,f16c,amx-tile,amx-bf16")))
