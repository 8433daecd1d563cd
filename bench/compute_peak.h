// The cores' peak rate of the vector products the projections run on, measured as the memory
// bandwidth is: independent chains of one instruction on every thread at once, and on one thread
// alone. Prefill and batched decode are a share of it; where two threads share one core's vector
// units (hyperthreads, or vCPUs a host maps onto them), both rates come out alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvd::bench {

struct ComputePeak {
  // "f32 fma" (sixteen lanes with AVX-512, else eight with AVX2), "bf16 dot" (vdpbf16ps: two
  // products a lane), "int8 dot" (vpdpbusd: four products a lane).
  std::string instruction;
  // Operations a second, 10⁹ of them, a multiply-add counting two: on every thread at once, and
  // on one thread alone.
  double gops_all_threads = 0.0;
  double gops_one_thread = 0.0;
  const char* unit = "GFLOP/s";  // "GOP/s" for the integer product
};

struct ComputePeaks {
  int32_t threads = 0;
  std::vector<ComputePeak> peaks;  // empty on a CPU without AVX2
};

// Every instruction above this CPU has, on `threads` threads (0: every core): the best of five
// passes, as the bandwidth read reports, since other load on a shared machine only ever slows a
// pass.
ComputePeaks MeasureComputePeaks(int32_t threads);

// "vector peak on N threads at once (one thread alone): f32 fma A (a) GFLOP/s, ...".
std::string ComputePeakNote(const ComputePeaks& peaks);

}  // namespace kvd::bench
