// The choices of every command's --dtype flag, from the kernels' one table of weight types.
#pragma once

#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace kvd::server {

inline std::vector<std::string> WeightTypeChoices() {
  return {kernels::kWeightTypeChoices.begin(), kernels::kWeightTypeChoices.end()};
}

}  // namespace kvd::server
