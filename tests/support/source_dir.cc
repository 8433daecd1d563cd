#include "tests/support/source_dir.h"

namespace kvd::test_support {

const std::string& SourceDir() {
  static const std::string* const dir = new std::string(KVD_SOURCE_DIR);
  return *dir;
}

}  // namespace kvd::test_support
