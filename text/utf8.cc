#include "text/utf8.h"

#include "text/internal/utf8.h"

namespace kvd::text {

bool IsValidUtf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    char32_t code_point = 0;
    pos += internal::DecodeUtf8At(bytes, pos, &code_point);
    if (code_point == static_cast<char32_t>(-1)) return false;
  }
  return true;
}

}  // namespace kvd::text
