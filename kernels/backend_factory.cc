#include <memory>

#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/devices.h"

namespace kvd::kernels {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name,
                                                       const BackendOptions& options) {
  if (name == "cpu") return std::make_unique<cpu::CpuBackend>(options);
  if (name == "cuda") {
    if (options.weight_dtype && IsQuantized(*options.weight_dtype)) {
      return absl::InvalidArgumentError(absl::StrCat("backend 'cuda' has no kernels for ",
                                                     std::string(DTypeName(*options.weight_dtype)),
                                                     " weights; use dtype auto, f32, bf16 or f16"));
    }
    return CreateCudaBackend(options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", std::string(name), "'; expected 'cpu' or 'cuda'"));
}

}  // namespace kvd::kernels
