// The repository's root folder, for tests that read the bundled model and the test data. It is
// compiled into one file of its own (source_dir.cc), so the objects of every other test do not
// depend on where the repository was cloned and a compiler cache reuses them across clones.
#pragma once

#include <string>

namespace kvd::test_support {

const std::string& SourceDir();

}  // namespace kvd::test_support
