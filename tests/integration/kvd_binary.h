// The path of the kvd binary under test. It is compiled into one file of its own
// (kvd_binary.cc), so the other objects of the integration tests do not depend on the build
// folder and a compiler cache reuses them across clones.
#pragma once

#include <string>

namespace kvd::testing {

const std::string& KvdBinary();

}  // namespace kvd::testing
