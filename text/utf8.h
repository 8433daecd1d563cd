// Whether bytes are text: well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF), as a JSON string must be. For text that arrives as bytes (gRPC's `bytes` fields).
#pragma once

#include <string_view>

namespace kvd::text {

bool IsValidUtf8(std::string_view bytes);

}  // namespace kvd::text
