#include "server/cli/exit_status.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kvd::server {

void ExitWith(const absl::Status& status) {
  std::fflush(stdout);
  if (status.ok()) std::exit(0);
  std::fprintf(stderr, "kvd: %s\n", std::string(status.message()).c_str());
  std::exit(status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1);
}

}  // namespace kvd::server
