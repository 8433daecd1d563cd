#include "kernels/backend.h"
#include "kernels/devices.h"

namespace kvd::kernels {

absl::StatusOr<std::vector<AcceleratorInfo>> ListCudaDevices() {
  return absl::FailedPreconditionError("kvd was built without CUDA (KVD_WITH_CUDA=OFF)");
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const BackendOptions&) {
  return absl::FailedPreconditionError(
      "backend 'cuda': kvd was built without CUDA (KVD_WITH_CUDA=OFF); use 'cpu'");
}

}  // namespace kvd::kernels
