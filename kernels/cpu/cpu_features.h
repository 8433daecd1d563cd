// What the CPU this process runs on can execute, read from CPUID and XGETBV (the instruction
// sets, and whether the OS saves their registers), so that kernels are chosen at run time by
// feature, never by the CPU's name.
#pragma once

#include <string>

namespace kvd::kernels::cpu {

struct CpuFeatures {
  std::string brand;    // the processor's name as it reports it ("AMD EPYC"), or empty
  bool avx2 = false;    // with FMA and F16C, which every AVX2 CPU kvd targets has
  bool avx512 = false;  // AVX-512 F, BW, DQ and VL
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool avx512_vnni = false;
  bool amx_bf16 = false;  // AMX tiles with BF16, and the OS allows this process to use them
  bool amx_int8 = false;

  // "avx2 avx512 avx512_bf16 …", or "none" for a CPU without AVX2.
  std::string ToString() const;
};

// The features of this CPU, detected once.
const CpuFeatures& HostCpuFeatures();

}  // namespace kvd::kernels::cpu
