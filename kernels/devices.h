// Discovery of the accelerators this build can use, for diagnostics (`kvd info`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::kernels {

struct AcceleratorInfo {
  int32_t index = 0;
  std::string name;
  uint64_t memory_bytes = 0;
  int32_t compute_capability = 0;  // major * 10 + minor
};

// The CUDA devices visible to this process. An error when the build has no CUDA support or the
// driver is missing; an empty list when there is a driver but no device.
[[nodiscard]] absl::StatusOr<std::vector<AcceleratorInfo>> ListCudaDevices();

class Backend;
struct BackendOptions;
// The CUDA backend on device 0: FailedPrecondition when the build has no CUDA support or no
// device is visible.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(
    const BackendOptions& options);

}  // namespace kvd::kernels
