#include "kernels/cpu/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace kvd::kernels::cpu {
namespace {

struct CpuidRegisters {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegisters Cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegisters r;
  if (static_cast<uint32_t>(__get_cpuid_max(0, nullptr)) < leaf) return r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool Bit(uint32_t value, int bit) { return ((value >> bit) & 1u) != 0; }

uint64_t EnabledStateComponents() {
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t{high} << 32) | low;
}

// Linux hands out AMX tile state only to a process that asks for it (arch_prctl, since 5.16).
bool RequestAmxTiles() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// The processor's brand string (CPUID 0x80000002-4), trimmed: what tells the machine kinds apart
// in a benchmark's record. Empty where the CPU does not report it.
std::string BrandString() {
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000004) return "";
  char brand[49] = {};
  for (uint32_t leaf = 0; leaf < 3; ++leaf) {
    uint32_t r[4];
    __cpuid(0x80000002 + leaf, r[0], r[1], r[2], r[3]);
    std::memcpy(brand + 16 * leaf, r, sizeof(r));
  }
  std::string text(brand);
  const size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

CpuFeatures Detect() {
  CpuFeatures f;
  f.brand = BrandString();
  const CpuidRegisters leaf1 = Cpuid(1, 0);
  const bool osxsave = Bit(leaf1.ecx, 27);
  if (!osxsave) return f;
  const uint64_t xcr0 = EnabledStateComponents();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;           // SSE and AVX registers
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;         // and opmask, ZMM0-15 upper, ZMM16-31
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  const CpuidRegisters leaf7 = Cpuid(7, 0);
  const CpuidRegisters leaf7_1 = Cpuid(7, 1);
  const bool fma = Bit(leaf1.ecx, 12), f16c = Bit(leaf1.ecx, 29);
  f.avx2 = ymm_state && Bit(leaf7.ebx, 5) && fma && f16c;
  f.avx512 = f.avx2 && zmm_state && Bit(leaf7.ebx, 16) && Bit(leaf7.ebx, 17) &&
             Bit(leaf7.ebx, 30) && Bit(leaf7.ebx, 31);
  f.avx512_vnni = f.avx512 && Bit(leaf7.ecx, 11);
  f.avx512_bf16 = f.avx512 && Bit(leaf7_1.eax, 5);
  f.avx512_fp16 = f.avx512 && Bit(leaf7.edx, 23);
  if (f.avx512 && tile_state && Bit(leaf7.edx, 24) && RequestAmxTiles()) {
    f.amx_bf16 = Bit(leaf7.edx, 22);
    f.amx_int8 = Bit(leaf7.edx, 25);
  }
  return f;
}

}  // namespace

std::string CpuFeatures::ToString() const {
  std::string out;
  for (const auto& [present, name] : {std::pair{avx2, "avx2"},
                                      {avx512, "avx512"},
                                      {avx512_bf16, "avx512_bf16"},
                                      {avx512_fp16, "avx512_fp16"},
                                      {avx512_vnni, "avx512_vnni"},
                                      {amx_bf16, "amx_bf16"},
                                      {amx_int8, "amx_int8"}}) {
    if (!present) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out.empty() ? "none" : out;
}

IsaSet CpuFeatures::isas() const {
  IsaSet set = 0;
  for (const auto& [present, isa] : {std::pair{avx2, kIsaAvx2},
                                     {avx512, kIsaAvx512},
                                     {avx512_vnni, kIsaAvx512Vnni},
                                     {avx512_bf16, kIsaAvx512Bf16},
                                     {amx_bf16, kIsaAmxBf16}}) {
    if (present) set |= isa;
  }
  return set;
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace kvd::kernels::cpu
