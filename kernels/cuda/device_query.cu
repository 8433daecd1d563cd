// CUDA device discovery through the runtime API.
#include <cuda_runtime.h>

#include <string>

#include "kernels/devices.h"

namespace kvd::kernels {

absl::StatusOr<std::vector<AcceleratorInfo>> ListCudaDevices() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice) return std::vector<AcceleratorInfo>{};
  if (error != cudaSuccess) {
    return absl::UnavailableError(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error));
  }
  std::vector<AcceleratorInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp props{};
    const cudaError_t prop_error = cudaGetDeviceProperties(&props, i);
    if (prop_error != cudaSuccess) {
      return absl::UnavailableError(std::string("cudaGetDeviceProperties: ") +
                                    cudaGetErrorString(prop_error));
    }
    devices.push_back(
        AcceleratorInfo{i, props.name, props.totalGlobalMem, props.major * 10 + props.minor});
  }
  return devices;
}

}  // namespace kvd::kernels
