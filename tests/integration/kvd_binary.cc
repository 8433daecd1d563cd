#include "tests/integration/kvd_binary.h"

namespace kvd::testing {

const std::string& KvdBinary() {
  static const std::string* const binary = new std::string(KVD_BINARY);
  return *binary;
}

}  // namespace kvd::testing
