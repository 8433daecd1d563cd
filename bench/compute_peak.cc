#include "bench/compute_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/stopwatch.h"
#include "kernels/cpu/cpu_features.h"

namespace kvd::bench {
namespace {

// Steps of every chain in one thread's pass: about ten milliseconds at a core's peak, so that
// starting the threads is lost in it.
constexpr int64_t kSteps = int64_t{1} << 22;
constexpr int kPasses = 5;

// Each kernel runs `steps` steps of independent chains (enough to cover the instruction's latency
// at two a cycle, and few enough to stay in registers) and returns what they add up to, so that
// the chains are kept; ops_per_step counts every chain's.
struct Kernel {
  const char* instruction;
  float (*run)(int64_t steps);
  double ops_per_step;
  const char* unit = "GFLOP/s";
};

// The sum of every lane of a kernel's chains (`bytes` of them), so that all of them are kept.
template <class Lane>
Lane SumOfLanes(const void* chains, size_t bytes) {
  Lane sum = 0;
  for (size_t at = 0; at < bytes; at += sizeof(Lane)) {
    Lane lane;
    std::memcpy(&lane, static_cast<const char*>(chains) + at, sizeof(Lane));
    sum += lane;
  }
  return sum;
}

constexpr int kAvx2Chains = 12;    // of 16 vector registers
constexpr int kAvx512Chains = 16;  // of 32

__attribute__((target("avx2,fma"))) float FmaAvx2(int64_t steps) {
  __m256 chains[kAvx2Chains];
#pragma GCC unroll 16
  for (int c = 0; c < kAvx2Chains; ++c) chains[c] = _mm256_set1_ps(0.001f * static_cast<float>(c));
  const __m256 scale = _mm256_set1_ps(0.999f);
  const __m256 add = _mm256_set1_ps(0.001f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kAvx2Chains; ++c) chains[c] = _mm256_fmadd_ps(chains[c], scale, add);
  }
  return SumOfLanes<float>(chains, sizeof(chains));
}

__attribute__((target("avx512f"))) float FmaAvx512(int64_t steps) {
  __m512 chains[kAvx512Chains];
#pragma GCC unroll 16
  for (int c = 0; c < kAvx512Chains; ++c) {
    chains[c] = _mm512_set1_ps(0.001f * static_cast<float>(c));
  }
  const __m512 scale = _mm512_set1_ps(0.999f);
  const __m512 add = _mm512_set1_ps(0.001f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kAvx512Chains; ++c) chains[c] = _mm512_fmadd_ps(chains[c], scale, add);
  }
  return SumOfLanes<float>(chains, sizeof(chains));
}

__attribute__((target("avx512f,avx512bf16"))) float Bf16DotAvx512(int64_t steps) {
  __m512 chains[kAvx512Chains];
#pragma GCC unroll 16
  for (int c = 0; c < kAvx512Chains; ++c) chains[c] = _mm512_setzero_ps();
  const __m512bh left = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh right = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(0.002f));
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kAvx512Chains; ++c) chains[c] = _mm512_dpbf16_ps(chains[c], left, right);
  }
  return SumOfLanes<float>(chains, sizeof(chains));
}

__attribute__((target("avx512f,avx512vnni"))) float Int8DotAvx512(int64_t steps) {
  __m512i chains[kAvx512Chains];
#pragma GCC unroll 16
  for (int c = 0; c < kAvx512Chains; ++c) chains[c] = _mm512_set1_epi32(c);
  const __m512i unsigned_bytes = _mm512_set1_epi8(3);
  const __m512i signed_bytes = _mm512_set1_epi8(-2);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int c = 0; c < kAvx512Chains; ++c) {
      chains[c] = _mm512_dpbusd_epi32(chains[c], unsigned_bytes, signed_bytes);
    }
  }
  // Unsigned, so that the sum wraps as vpdpbusd's lanes do.
  return static_cast<float>(SumOfLanes<uint32_t>(chains, sizeof(chains)));
}

// Seconds of `kernel` run on `threads` threads started together (the calling thread one of
// them).
double RunTogether(const Kernel& kernel, int32_t threads) {
  std::atomic<int32_t> ready = 0;
  std::atomic<bool> go = false;
  std::vector<float> results(static_cast<size_t>(threads));
  std::vector<std::thread> others;
  for (int32_t t = 1; t < threads; ++t) {
    others.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) _mm_pause();
      results[t] = kernel.run(kSteps);
    });
  }
  while (ready.load() != threads - 1) std::this_thread::yield();
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  results[0] = kernel.run(kSteps);
  for (std::thread& other : others) other.join();
  const double seconds = SecondsSince(start);
  float all = 0.0f;
  for (const float result : results) all += result;
  volatile float keep = all;  // every thread's chains are used, so they stay
  (void)keep;
  return seconds;
}

// The best rate of kPasses passes on `threads` threads at once, 10⁹ operations a second.
double PeakGops(const Kernel& kernel, int32_t threads) {
  double best = 0.0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const double ops = kernel.ops_per_step * static_cast<double>(kSteps) * threads;
    best = std::max(best, ops / RunTogether(kernel, threads) / 1e9);
  }
  return best;
}

}  // namespace

ComputePeaks MeasureComputePeaks(int32_t threads) {
  const kernels::cpu::CpuFeatures& features = kernels::cpu::HostCpuFeatures();
  ComputePeaks result{
      .threads = threads > 0
                     ? threads
                     : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()))};
  std::vector<Kernel> kernels;
  if (features.avx512) {
    kernels.push_back({"f32 fma", FmaAvx512, 2.0 * 16 * kAvx512Chains});
  } else if (features.avx2) {
    kernels.push_back({"f32 fma", FmaAvx2, 2.0 * 8 * kAvx2Chains});
  }
  if (features.avx512 && features.avx512_bf16) {
    kernels.push_back({"bf16 dot", Bf16DotAvx512, 2.0 * 2 * 16 * kAvx512Chains});
  }
  if (features.avx512 && features.avx512_vnni) {
    kernels.push_back({"int8 dot", Int8DotAvx512, 2.0 * 4 * 16 * kAvx512Chains, "GOP/s"});
  }
  for (const Kernel& kernel : kernels) {
    const double all_threads = PeakGops(kernel, result.threads);
    result.peaks.push_back(
        {.instruction = kernel.instruction,
         .gops_all_threads = all_threads,
         .gops_one_thread = result.threads == 1 ? all_threads : PeakGops(kernel, 1),
         .unit = kernel.unit});
  }
  return result;
}

std::string ComputePeakNote(const ComputePeaks& peaks) {
  if (peaks.peaks.empty()) return "vector peak not measured (no AVX2)";
  if (peaks.threads == 1) {
    return absl::StrCat(
        "vector peak on one thread: ",
        absl::StrJoin(peaks.peaks, ", ", [](std::string* out, const ComputePeak& peak) {
          absl::StrAppendFormat(out, "%s %.1f %s", peak.instruction, peak.gops_all_threads,
                                peak.unit);
        }));
  }
  return absl::StrFormat(
      "vector peak on %d threads at once (one thread alone): %s", peaks.threads,
      absl::StrJoin(peaks.peaks, ", ", [](std::string* out, const ComputePeak& peak) {
        absl::StrAppendFormat(out, "%s %.1f (%.1f) %s", peak.instruction, peak.gops_all_threads,
                              peak.gops_one_thread, peak.unit);
      }));
}

}  // namespace kvd::bench
