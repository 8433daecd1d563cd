#include "bench/memory_bandwidth.h"

#include <immintrin.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/stopwatch.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/host_memory.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::bench {
namespace {

// The sum of data[first, last), read with eight AVX2 accumulators so that the loads, not the
// adds, bound it.
__attribute__((target("avx2"))) float SumAvx2(const float* data, int64_t first, int64_t last) {
  __m256 acc[8];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  int64_t i = first;
  for (; i + 64 <= last; i += 64) {
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(data + i + 8 * j));
  }
  float lanes[8];
  __m256 total = acc[0];
  for (int j = 1; j < 8; ++j) total = _mm256_add_ps(total, acc[j]);
  _mm256_storeu_ps(lanes, total);
  float sum = 0.0f;
  for (float lane : lanes) sum += lane;
  for (; i < last; ++i) sum += data[i];
  return sum;
}

float SumPlain(const float* data, int64_t first, int64_t last) {
  float lanes[16] = {};
  int64_t i = first;
  for (; i + 16 <= last; i += 16) {
    for (int j = 0; j < 16; ++j) lanes[j] += data[i + j];
  }
  float sum = 0.0f;
  for (float lane : lanes) sum += lane;
  for (; i < last; ++i) sum += data[i];
  return sum;
}

// a[i] = b[i] + scalar * c[i] over [first, last), as STREAM's triad, eight floats a step.
__attribute__((target("avx2,fma"))) void TriadAvx2(float* a, const float* b, const float* c,
                                                   float scalar, int64_t first, int64_t last) {
  const __m256 s = _mm256_set1_ps(scalar);
  int64_t i = first;
  for (; i + 8 <= last; i += 8) {
    _mm256_storeu_ps(a + i, _mm256_fmadd_ps(s, _mm256_loadu_ps(c + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < last; ++i) a[i] = b[i] + scalar * c[i];
}

void TriadPlain(float* a, const float* b, const float* c, float scalar, int64_t first,
                int64_t last) {
  for (int64_t i = first; i < last; ++i) a[i] = b[i] + scalar * c[i];
}

// The best of five triad passes over three buffers of `bytes` / 3, in GB/s of STREAM's count.
absl::StatusOr<double> MeasureTriad(int64_t bytes, kernels::cpu::ThreadPool& pool) {
  const int64_t count = bytes / 3 / static_cast<int64_t>(sizeof(float));
  std::vector<std::unique_ptr<kernels::DeviceBuffer>> buffers;
  for (int i = 0; i < 3; ++i) {
    auto buffer = kernels::cpu::AllocateResident(static_cast<size_t>(count) * sizeof(float), pool);
    if (!buffer.ok()) return buffer.status();
    buffers.push_back(*std::move(buffer));
  }
  float* a = static_cast<float*>(buffers[0]->data());
  float* b = static_cast<float*>(buffers[1]->data());
  float* c = static_cast<float*>(buffers[2]->data());
  const bool avx2 = kernels::cpu::HostCpuFeatures().avx2;
  const int32_t parts = pool.num_threads();
  // Each thread writes the part of b and c it will read, so the pages are near it.
  pool.ParallelFor(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      for (int64_t i = count * part / parts; i < count * (part + 1) / parts; ++i) {
        b[i] = 1.0f;
        c[i] = 2.0f;
      }
    }
  });
  double best = 0.0;
  for (int pass = 0; pass < 5; ++pass) {
    const Clock::time_point start = Clock::now();
    pool.ParallelFor(parts, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t first = count * part / parts;
        const int64_t last = count * (part + 1) / parts;
        avx2 ? TriadAvx2(a, b, c, 3.0f, first, last) : TriadPlain(a, b, c, 3.0f, first, last);
      }
    });
    best = std::max(best,
                    3.0 * static_cast<double>(count) * sizeof(float) / SecondsSince(start) / 1e9);
  }
  return best;
}

}  // namespace

absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(int64_t bytes, int32_t threads) {
  kernels::cpu::ThreadPool pool(
      threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  // The kind of memory the weights are in: resident, in huge pages where the kernel has them.
  const std::optional<kernels::cpu::AnonymousMemory> before =
      kernels::cpu::ProcessAnonymousMemory();
  auto buffer = kernels::cpu::AllocateResident(static_cast<size_t>(bytes), pool);
  if (!buffer.ok()) return buffer.status();
  ReadBandwidth result;
  if (const std::optional<kernels::cpu::AnonymousMemory> after =
          kernels::cpu::ProcessAnonymousMemory();
      before && after) {
    const double gained =
        static_cast<double>(after->huge_page_bytes) - static_cast<double>(before->huge_page_bytes);
    result.huge_page_share = std::clamp(gained / static_cast<double>(bytes), 0.0, 1.0);
  }
  const auto* data = static_cast<const float*>((*buffer)->data());
  std::vector<double> rates;
  const auto count = bytes / static_cast<int64_t>(sizeof(float));
  const bool avx2 = kernels::cpu::HostCpuFeatures().avx2;
  std::vector<float> sums(static_cast<size_t>(pool.num_threads()) * 16);
  for (int pass = 0; pass < 5; ++pass) {
    const Clock::time_point start = Clock::now();
    pool.ParallelFor(pool.num_threads(), [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t first = count * part / pool.num_threads();
        const int64_t last = count * (part + 1) / pool.num_threads();
        sums[part * 16] = avx2 ? SumAvx2(data, first, last) : SumPlain(data, first, last);
      }
    });
    rates.push_back(static_cast<double>(count) * sizeof(float) / SecondsSince(start) / 1e9);
  }
  volatile float keep = sums[0];  // the sums are used, so the reads stay
  (void)keep;
  result.gb_per_second = *std::max_element(rates.begin(), rates.end());
  buffer->reset();
  const absl::StatusOr<double> triad = MeasureTriad(bytes, pool);
  if (!triad.ok()) return triad.status();
  result.triad_gb_per_second = *triad;
  return result;
}

std::string HugePageNote(std::optional<double> share) {
  if (!share) return "huge pages not reported";
  return absl::StrFormat("%.0f%% in huge pages", 100.0 * *share);
}

std::string ResidentMemoryNote() {
  const std::optional<kernels::cpu::AnonymousMemory> resident =
      kernels::cpu::ProcessAnonymousMemory();
  if (!resident || resident->bytes == 0) return "resident anonymous memory not reported";
  return absl::StrFormat("resident anonymous memory %.1f MB, %s",
                         static_cast<double>(resident->bytes) / 1e6,
                         HugePageNote(static_cast<double>(resident->huge_page_bytes) /
                                      static_cast<double>(resident->bytes)));
}

}  // namespace kvd::bench
