// What the CPU this process runs on can execute, read from CPUID and XGETBV (the instruction
// sets, and whether the OS saves their registers), so that kernels are chosen at run time by
// feature, never by the CPU's name.
#pragma once

#include <cstdint>
#include <string>

namespace kvd::kernels::cpu {

// Instruction sets as bits: what a kernel is compiled for (isa_targets.h) against what a CPU runs.
enum Isa : uint32_t {
  kIsaAvx2 = 1u << 0,    // with FMA and F16C
  kIsaAvx512 = 1u << 1,  // F, BW, DQ and VL
  kIsaAvx512Vnni = 1u << 2,
  kIsaAvx512Bf16 = 1u << 3,
  kIsaAmxBf16 = 1u << 4,  // and the OS lets this process use the tiles
};
using IsaSet = uint32_t;

// The sets isa_targets.h's target attributes compile for.
inline constexpr IsaSet kAvx2Isas = kIsaAvx2;
inline constexpr IsaSet kAvx512Isas = kIsaAvx2 | kIsaAvx512 | kIsaAvx512Vnni;
inline constexpr IsaSet kAvx512Bf16Isas = kAvx512Isas | kIsaAvx512Bf16;
inline constexpr IsaSet kAmxBf16Isas = kAvx512Bf16Isas | kIsaAmxBf16;

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
  // The instruction sets kernels may need that this CPU runs.
  IsaSet isas() const;
};

// The features of this CPU, detected once.
const CpuFeatures& HostCpuFeatures();

}  // namespace kvd::kernels::cpu
