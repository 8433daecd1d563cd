#include "kernels/backend.h"

#include "absl/strings/str_cat.h"

namespace kvd::kernels {

absl::Status Backend::CheckKvCacheType(DType dtype) const {
  if (dtype == DType::kF32) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("backend '", std::string(name()),
                                                 "' keeps the kv cache in f32 only, not ",
                                                 std::string(DTypeName(dtype))));
}

}  // namespace kvd::kernels
