#include "kernels/backend.h"

#include "absl/strings/str_cat.h"

namespace kvd::kernels {

absl::Status Backend::CheckKvCacheType(DType dtype) const {
  if (dtype == DType::kF32) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("backend '", std::string(name()),
                                                 "' keeps the kv cache in f32 only, not ",
                                                 std::string(DTypeName(dtype))));
}

void Backend::LinearGroup(const Tensor& x, std::span<const Projection> projections) {
  for (const Projection& projection : projections) {
    Linear(x, *projection.weight, projection.bias, projection.out);
  }
}

void Backend::GatedLinear(const Tensor& x, const Tensor& gate_weight, const Tensor& up_weight,
                          Tensor up, Tensor out) {
  Linear(x, gate_weight, nullptr, out);
  Linear(x, up_weight, nullptr, up);
  SiluMul(out, up, out);
}

}  // namespace kvd::kernels
