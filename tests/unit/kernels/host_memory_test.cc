#include "kernels/cpu/host_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// How many of the pages of [data, data + bytes) are in memory now.
size_t ResidentPages(void* data, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((bytes + page - 1) / page);
  EXPECT_EQ(mincore(data, bytes, flags.data()), 0);
  size_t resident = 0;
  for (unsigned char flag : flags) resident += flag & 1;
  return resident;
}

TEST(HostMemoryTest, SmallBuffersAreZeroedAndAligned) {
  ThreadPool pool(2);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kHugePage - 1}) {
    auto buffer = AllocateResident(bytes, pool);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    ASSERT_GE((*buffer)->size(), std::max<size_t>(bytes, 1));
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 64, 0u);
    const auto* bytes_in = static_cast<const unsigned char*>((*buffer)->data());
    for (size_t i = 0; i < (*buffer)->size(); ++i) ASSERT_EQ(bytes_in[i], 0) << bytes << " " << i;
  }
}

TEST(HostMemoryTest, LargeBuffersStartOnAHugePageAndAreResidentAndZero) {
  ThreadPool pool(2);
  const size_t bytes = 3 * kHugePage + 12345;  // a tail that is not a whole huge page
  auto buffer = AllocateResident(bytes, pool);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  void* data = (*buffer)->data();
  const size_t size = (*buffer)->size();
  ASSERT_GE(size, bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHugePage, 0u);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Every page is in memory before anything writes to it.
  EXPECT_EQ(ResidentPages(data, size), (size + page - 1) / page);
  const auto* words = static_cast<const uint64_t*>(data);
  for (size_t i = 0; i < size / sizeof(uint64_t); ++i) ASSERT_EQ(words[i], 0u) << i;
  // The whole buffer is writable, to its last byte, and nothing of the mapping's alignment slack
  // stays mapped after it.
  static_cast<unsigned char*>(data)[size - 1] = 1;
  unsigned char flag = 0;
  errno = 0;
  EXPECT_EQ(mincore(static_cast<char*>(data) + size, page, &flag), -1);
  EXPECT_EQ(errno, ENOMEM);
  // Advised into huge pages: "hg" among the mapping's flags wherever the kernel was built with
  // them, whatever their current mode.
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) return;
  std::ifstream smaps("/proc/self/smaps");
  std::ostringstream start;
  start << std::hex << reinterpret_cast<uintptr_t>(data) << "-";
  bool found = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.rfind(start.str(), 0) == 0) found = true;
    if (found && line.rfind("VmFlags:", 0) == 0) {
      EXPECT_NE(line.find(" hg"), std::string::npos) << line;
      break;
    }
  }
  EXPECT_TRUE(found);
}

// Writes `text` to `path`, making its directories.
void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class CgroupMemoryLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        std::filesystem::temp_directory_path() / ("kvd_cgroup_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

TEST_F(CgroupMemoryLimitTest, TheLowestLimitOfTheCgroupAndItsAncestorsCounts) {
  WriteFile(root_ / "pod/container/memory.max", "max\n");
  WriteFile(root_ / "pod/memory.max", "1073741824\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "0::/pod/container\n"), size_t{1} << 30);
  WriteFile(root_ / "pod/container/memory.max", "536870912\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "0::/pod/container\n"), size_t{1} << 29);
}

TEST_F(CgroupMemoryLimitTest, VersionOneAndHybridHierarchiesAreRead) {
  // v1: "unlimited" is a number near 2^63.
  WriteFile(root_ / "memory/job/memory.limit_in_bytes", "9223372036854771712\n");
  WriteFile(root_ / "memory/memory.limit_in_bytes", "2147483648\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "5:cpu:/\n4:memory:/job\n"), size_t{2} << 30);
  EXPECT_EQ(CgroupMemoryLimit(root_, "4:cpuacct,memory:/job\n"), size_t{2} << 30);
  // A hybrid system's v2 hierarchy is under unified/; the lower of both limits counts.
  WriteFile(root_ / "unified/job/memory.max", "5000\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "4:memory:/job\n0::/job\n"), size_t{5000});
}

TEST_F(CgroupMemoryLimitTest, NoLimitAnywhereIsNone) {
  WriteFile(root_ / "a/memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "0::/a\n"), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimit(root_, "0::/not/there\n"), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimit(root_, ""), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimit(root_, "garbage without colons\n"), std::nullopt);
  // A path that would climb out of the root is not followed.
  WriteFile(root_.parent_path() / "memory.max", "4096\n");
  EXPECT_EQ(CgroupMemoryLimit(root_, "0::/../\n"), std::nullopt);
  std::filesystem::remove(root_.parent_path() / "memory.max");
}

TEST(HostMemoryTest, UsableMemoryIsPositiveAndAtMostPhysicalMemory) {
  const size_t physical =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  EXPECT_GT(UsableHostMemoryBytes(), 0u);
  EXPECT_LE(UsableHostMemoryBytes(), physical);
}

TEST(HostMemoryTest, SmapsRollupGivesAnonymousMemoryAndItsHugePages) {
  const std::string rollup =
      "55d0c0a00000-7ffd5b3fe000 ---p 00000000 00:00 0                          [rollup]\n"
      "Rss:             2105344 kB\n"
      "Anonymous:       2097152 kB\n"
      "LazyFree:              0 kB\n"
      "AnonHugePages:   2093056 kB\n"
      "ShmemPmdMapped:        0 kB\n";
  const std::optional<AnonymousMemory> parsed = ParseSmapsRollup(rollup);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->bytes, size_t{2097152} * 1024);
  EXPECT_EQ(parsed->huge_page_bytes, size_t{2093056} * 1024);
  for (const char* bad :
       {"Anonymous: 4 kB\n", "AnonHugePages: 4 kB\n",
        "Anonymous: 4 kB\nAnonymous: 4 kB\nAnonHugePages: 0 kB\n",
        "Anonymous: 4 MB\nAnonHugePages: 0 kB\n", "Anonymous: -4 kB\nAnonHugePages: 0 kB\n",
        "Anonymous: 99999999999999999999 kB\nAnonHugePages: 0 kB\n",
        "Anonymous: 4\nAnonHugePages: 0 kB\n", ""}) {
    EXPECT_FALSE(ParseSmapsRollup(bad).has_value()) << bad;
  }
  // This process's: a huge buffer just faulted in is resident anonymous memory.
  const std::optional<AnonymousMemory> before = ProcessAnonymousMemory();
  if (!before) GTEST_SKIP() << "no /proc/self/smaps_rollup";
  ThreadPool pool(2);
  auto buffer = AllocateResident(8 * kHugePage, pool);
  ASSERT_TRUE(buffer.ok());
  const std::optional<AnonymousMemory> after = ProcessAnonymousMemory();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(after->bytes, before->bytes + 7 * kHugePage);
  EXPECT_LE(after->huge_page_bytes, after->bytes);
}

TEST(HostMemoryTest, ReleasedBuffersAreUnmapped) {
  ThreadPool pool(1);
  void* data = nullptr;
  size_t size = 0;
  {
    auto buffer = AllocateResident(kHugePage, pool);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    data = (*buffer)->data();
    size = (*buffer)->size();
  }
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((size + page - 1) / page);
  errno = 0;
  EXPECT_EQ(mincore(data, size, flags.data()), -1);
  EXPECT_EQ(errno, ENOMEM);  // nothing is mapped there
}

}  // namespace
}  // namespace kvd::kernels::cpu
