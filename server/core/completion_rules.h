// The rules of a completion request's values in the words of its errors, for the readers of
// each protocol and the resolver to say the same thing the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "scheduler/request.h"

namespace kvd::server {

inline constexpr int32_t kMaxLogprobs = 20;

inline std::string RoleRule(std::string_view message_param) {
  return absl::StrCat("'", std::string(message_param),
                      ".role' must be one of system, developer, user, assistant, tool");
}
inline std::string StopRule() {
  return absl::StrCat("'stop' must be a string or an array of at most ", scheduler::kMaxStopStrings,
                      " strings");
}
inline std::string LogitBiasRule(std::string_view token) {
  return absl::StrCat("logit_bias for token ", std::string(token),
                      " must be a number in [-100, 100]");
}
inline std::string DocumentsRule() {
  return "'documents' must be an array of at most one document id";
}

}  // namespace kvd::server
