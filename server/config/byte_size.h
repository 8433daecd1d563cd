// Byte sizes as a config writes them: a plain number of bytes or a number with a unit
// ("512MiB", "1GiB", "1GB", "100B").
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvd::server {

// Parses "<digits>[ ]<unit>" or "<digits>". Units: B; KiB, MiB, GiB, TiB (powers of 1024);
// KB, MB, GB, TB (powers of 1000). InvalidArgument on anything else or on overflow.
[[nodiscard]] absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

}  // namespace kvd::server
