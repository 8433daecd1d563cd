// Fuzzes kernels::cpu::CgroupMemoryLimit on any /proc/self/cgroup text, over a cgroup tree made
// once in a temporary folder: v2 limits at the top, in a nested group and under unified/, v1's
// under memory/, and beside the tree a lower limit that only a path climbing out of it reaches.
// The limit found, if any, must be one the tree holds.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "fuzz_support.h"
#include "kernels/cpu/host_memory.h"

namespace {

namespace fs = std::filesystem;

struct CgroupTree {
  fs::path root;
  std::set<size_t> limits;  // every limit the tree holds (not the one outside it)
};

void WriteLimit(const fs::path& dir, const char* file, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(dir / file) << text << "\n";
}

const CgroupTree& Tree() {
  static const CgroupTree tree = [] {
    const fs::path base =
        fs::temp_directory_path() / ("kvd_cgroup_fuzz_" + std::to_string(getpid()));
    CgroupTree made{.root = base / "root",
                    .limits = {1u << 30, 1u << 29, 3u << 28, 1u << 28, 5u << 27}};
    WriteLimit(base, "memory.max", "4096");  // outside the tree
    WriteLimit(base / "memory", "memory.limit_in_bytes", "4096");
    WriteLimit(made.root, "memory.max", "max");
    WriteLimit(made.root / "a", "memory.max", std::to_string(1u << 30));
    WriteLimit(made.root / "a" / "b", "memory.max", std::to_string(1u << 29));
    WriteLimit(made.root / "a" / "c", "memory.max", "garbage");
    WriteLimit(made.root / "unified" / "u", "memory.max", std::to_string(3u << 28));
    WriteLimit(made.root / "memory", "memory.limit_in_bytes", "9223372036854771712");
    WriteLimit(made.root / "memory" / "m", "memory.limit_in_bytes", std::to_string(1u << 28));
    WriteLimit(made.root / "memory" / "m" / "n", "memory.limit_in_bytes", std::to_string(5u << 27));
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(fs::temp_directory_path() / ("kvd_cgroup_fuzz_" + std::to_string(getpid())),
                     ignored);
    });
    return made;
  }();
  return tree;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const CgroupTree& tree = Tree();
  const auto limit = kvd::kernels::cpu::CgroupMemoryLimit(tree.root, kvd::fuzz::AsText(data, size));
  kvd::fuzz::Require(!limit || tree.limits.count(*limit) == 1,
                     "a limit from outside the cgroup tree, or one it does not hold");
  return 0;
}
