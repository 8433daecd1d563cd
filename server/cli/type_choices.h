// The choices of the commands' type flags (--dtype, --kv-cache-dtype), from the kernels' tables
// of weight types and of cache types.
#pragma once

#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/kv_layout.h"

namespace kvd::server {

inline std::vector<std::string> WeightTypeChoices() {
  return {kernels::kWeightTypeChoices.begin(), kernels::kWeightTypeChoices.end()};
}

inline std::vector<std::string> KvCacheTypeChoices() {
  return {kernels::kKvCacheTypeChoices.begin(), kernels::kKvCacheTypeChoices.end()};
}

}  // namespace kvd::server
