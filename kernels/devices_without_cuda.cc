#include "kernels/devices.h"

namespace kvd::kernels {

absl::StatusOr<std::vector<AcceleratorInfo>> ListCudaDevices() {
  return absl::FailedPreconditionError("kvd was built without CUDA (KVD_WITH_CUDA=OFF)");
}

}  // namespace kvd::kernels
